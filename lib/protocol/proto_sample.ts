/**
 * The protobuf form of sample results (SDK 0.25). Sampled sequences are short, so their
 * tokens and log-probs stay plain arrays, the shape every renderer and rollout consumes.
 *
 * @module
 */

import { float32s, int32List, int32s, toList } from "./proto_arrays.ts";
import { protoType } from "./proto_schema.ts";
import { bytesOf } from "./proto_writer.ts";
import type { SampleResponse } from "./types.ts";

const SampleResponseType = protoType("SampleResponse");

// Shape of a decoded message (protobufjs `toObject` with longs as numbers).
interface ProtoSampleResponse {
  prompt_cache_hit_tokens?: number;
  sequences?: Array<{ stop_reason?: number; tokens?: Uint8Array; logprobs?: Uint8Array }>;
  prompt_logprobs?: Uint8Array;
  topk_prompt_logprobs?: {
    token_ids: Uint8Array;
    logprobs: Uint8Array;
    k: number;
    prompt_length: number;
  };
}

const TOPK_PAD_LOGPROB = -99999.0;

/** Encodes a sample result; null prompt logprobs become NaN, top-k rows are padded. */
export function encodeSampleResponse(res: SampleResponse): Uint8Array {
  const msg: Record<string, unknown> = {
    prompt_cache_hit_tokens: res.prompt_cache_hit_tokens ?? 0,
    sequences: res.sequences.map((s) => ({
      stop_reason: s.stop_reason === "length" ? 1 : 0,
      tokens: bytesOf(Int32Array.from(s.tokens)),
      ...(s.logprobs ? { logprobs: bytesOf(Float32Array.from(s.logprobs)) } : {}),
    })),
  };
  if (res.prompt_logprobs) {
    msg.prompt_logprobs = bytesOf(Float32Array.from(res.prompt_logprobs, (x) => x ?? NaN));
  }
  const topk = res.topk_prompt_logprobs;
  if (topk) {
    const k = Math.max(0, ...topk.map((r) => r?.length ?? 0));
    const ids = new Int32Array(topk.length * k);
    const lps = new Float32Array(topk.length * k).fill(TOPK_PAD_LOGPROB);
    topk.forEach((row, i) =>
      row?.forEach(([t, lp], j) => {
        ids[i * k + j] = t;
        lps[i * k + j] = lp;
      })
    );
    msg.topk_prompt_logprobs = {
      token_ids: bytesOf(ids),
      logprobs: bytesOf(lps),
      k,
      prompt_length: topk.length,
    };
  }
  return SampleResponseType.encode(SampleResponseType.fromObject(msg)).finish();
}

/** Decodes a sample result (NaN prompt logprobs → null, sentinel top-k rows → null). */
export function decodeSampleResponse(bytes: Uint8Array): SampleResponse {
  const m = SampleResponseType.toObject(SampleResponseType.decode(bytes), {
    longs: Number,
  }) as ProtoSampleResponse;
  const res: SampleResponse = {
    type: "sample",
    prompt_cache_hit_tokens: m.prompt_cache_hit_tokens ?? 0,
    sequences: (m.sequences ?? []).map((s, i) => ({
      stop_reason: (s.stop_reason ?? 0) === 1 ? "length" : "stop",
      tokens: int32List(s.tokens ?? new Uint8Array(), `sequences[${i}].tokens`),
      logprobs: s.logprobs ? toList(float32s(s.logprobs, `sequences[${i}].logprobs`)) : null,
    })),
  };
  if (m.prompt_logprobs && m.prompt_logprobs.length > 0) {
    res.prompt_logprobs = Array.from(
      float32s(m.prompt_logprobs, "prompt_logprobs"),
      (x) => Number.isNaN(x) ? null : x,
    );
  }
  const t = m.topk_prompt_logprobs;
  if (t) {
    const ids = int32s(t.token_ids, "topk_prompt_logprobs.token_ids");
    const lps = float32s(t.logprobs, "topk_prompt_logprobs.logprobs");
    const rows: ([number, number][] | null)[] = [];
    for (let i = 0; i < t.prompt_length; i++) {
      const row: [number, number][] = [];
      for (let j = 0; j < t.k; j++) {
        const lp = lps[i * t.k + j];
        if (lp === TOPK_PAD_LOGPROB && ids[i * t.k + j] === 0) break;
        row.push([ids[i * t.k + j], lp]);
      }
      rows.push(row.length ? row : null);
    }
    res.topk_prompt_logprobs = rows;
  }
  return res;
}
