/**
 * The protobuf form of Tinker's wire (SDK 0.25): forward_backward requests, and the results
 * of forward_backward and sample futures. Converts between protobuf bytes and the JSON-shaped
 * types of `types.ts`, so the rest of the code sees one shape whatever the encoding.
 *
 * Arrays travel as raw little-endian buffers (int32 tokens, int64/float32 tensors).
 *
 * @module
 */

import protobuf from "protobufjs";
import type { Datum, ForwardBackwardOutput, SampleResponse, TensorData } from "./types.ts";

const root = protobuf.parse(
  Deno.readTextFileSync(new URL("./tinker_public.proto", import.meta.url)),
  { keepCase: true },
).root;
const ForwardBackwardRequestType = root.lookupType("tinker_public.ForwardBackwardRequest");
const ForwardBackwardOutputType = root.lookupType("tinker_public.ForwardBackwardOutput");
const SampleResponseType = root.lookupType("tinker_public.SampleResponse");

// Shapes of decoded messages (protobufjs `toObject` with longs as numbers).
interface ProtoTensor {
  dense?: Uint8Array;
  sparse_csr?: { values: Uint8Array; crow_indices: Uint8Array; col_indices: Uint8Array };
  dtype: number;
  shape?: number[];
}
interface ProtoForwardBackwardRequest {
  model_id: string;
  seq_id: number;
  loss_fn: string;
  loss_fn_config?: Record<string, number>;
  forward_only: boolean;
  data?: Array<{
    model_input?: Array<{ encoded_text?: { tokens: Uint8Array } }>;
    loss_fn_inputs?: Record<string, ProtoTensor>;
  }>;
}
interface ProtoBatchedTensor {
  data: Uint8Array;
  offsets: Uint8Array;
  dtype: number;
  trailing_shape?: number[];
}
interface ProtoForwardBackwardOutput {
  loss_fn_output_type: string;
  loss_fn_outputs?: Array<{ num_datums: number; fields?: Record<string, ProtoBatchedTensor> }>;
  metrics?: Record<string, number>;
}
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

const DTYPE = { FLOAT32: 1, INT64: 2, INT32: 3, BFLOAT16: 4 } as const;
const TOPK_PAD_LOGPROB = -99999.0;

/** A decoded protobuf forward_backward request (the proto form has `forward_only` inline). */
export interface ForwardBackwardProtoRequest {
  model_id: string;
  seq_id: number;
  data: Datum[];
  loss_fn: string;
  loss_fn_config: Record<string, number>;
  forward_only: boolean;
}

// ---- forward_backward request ----

/** Encodes a forward_backward request as the SDK 0.25 does. */
export function encodeForwardBackwardRequest(req: ForwardBackwardProtoRequest): Uint8Array {
  const msg = {
    model_id: req.model_id,
    seq_id: req.seq_id,
    loss_fn: req.loss_fn,
    loss_fn_config: req.loss_fn_config,
    forward_only: req.forward_only,
    data: req.data.map((d) => ({
      model_input: d.model_input.chunks.map((c) => {
        if (c.type !== "encoded_text") {
          throw new Error(`proto encoding of ${c.type} chunks is not supported`);
        }
        return { encoded_text: { tokens: bytesOf(Int32Array.from(c.tokens)) } };
      }),
      loss_fn_inputs: Object.fromEntries(
        Object.entries(d.loss_fn_inputs).map(([k, t]) => [k, encodeTensor(t)]),
      ),
    })),
  };
  return ForwardBackwardRequestType.encode(ForwardBackwardRequestType.fromObject(msg)).finish();
}

/** Decodes a protobuf forward_backward request; sparse tensors keep their CSR fields. */
export function decodeForwardBackwardRequest(bytes: Uint8Array): ForwardBackwardProtoRequest {
  const m = ForwardBackwardRequestType.toObject(ForwardBackwardRequestType.decode(bytes), {
    longs: Number,
    defaults: true,
  }) as ProtoForwardBackwardRequest;
  return {
    model_id: m.model_id,
    seq_id: m.seq_id,
    loss_fn: m.loss_fn,
    loss_fn_config: m.loss_fn_config ?? {},
    forward_only: m.forward_only,
    data: (m.data ?? []).map((d, i) => ({
      model_input: {
        chunks: (d.model_input ?? []).map((c, j) => {
          if (c.encoded_text) {
            return { type: "encoded_text", tokens: Array.from(int32s(c.encoded_text.tokens)) };
          }
          throw new Error(`data[${i}].model_input[${j}]: only encoded_text chunks are supported`);
        }),
      },
      loss_fn_inputs: Object.fromEntries(
        Object.entries(d.loss_fn_inputs ?? {}).map((
          [k, t],
        ) => [k, decodeTensor(t, `data[${i}].${k}`)]),
      ),
    })),
  };
}

// ---- forward_backward result ----

/** Encodes forward_backward outputs: one ArrayRecord, each field batched over datums. */
export function encodeForwardBackwardOutput(out: ForwardBackwardOutput): Uint8Array {
  const keys = new Set(out.loss_fn_outputs.flatMap((o) => Object.keys(o)));
  const fields: Record<string, unknown> = {};
  for (const key of keys) {
    const tensors = out.loss_fn_outputs.map((o, i) => {
      const t = o[key];
      if (!t) throw new Error(`loss_fn_outputs[${i}] lacks ${key}`);
      return t;
    });
    const dtype = tensors[0].dtype;
    const trailing = (tensors[0].shape ?? [tensors[0].data.length]).slice(1);
    const parts = tensors.map((t) =>
      bytesOf(dtype === "int64" ? toInt64(t.data) : Float32Array.from(t.data))
    );
    const offsets = new BigInt64Array(parts.length + 1);
    parts.forEach((p, i) => offsets[i + 1] = offsets[i] + BigInt(p.length));
    fields[key] = {
      data: concatBytes(parts),
      offsets: bytesOf(offsets),
      dtype: dtype === "int64" ? DTYPE.INT64 : DTYPE.FLOAT32,
      trailing_shape: trailing,
    };
  }
  const msg = {
    loss_fn_output_type: out.loss_fn_output_type,
    metrics: out.metrics,
    loss_fn_outputs: [{ type_tag: "ArrayRecord", fields, num_datums: out.loss_fn_outputs.length }],
  };
  return ForwardBackwardOutputType.encode(ForwardBackwardOutputType.fromObject(msg)).finish();
}

/** Decodes forward_backward outputs, concatenating the datums of every ArrayRecord. */
export function decodeForwardBackwardOutput(bytes: Uint8Array): ForwardBackwardOutput {
  const m = ForwardBackwardOutputType.toObject(ForwardBackwardOutputType.decode(bytes), {
    longs: Number,
    defaults: true,
  }) as ProtoForwardBackwardOutput;
  const outputs: Array<Record<string, TensorData>> = [];
  for (const rec of m.loss_fn_outputs ?? []) {
    const start = outputs.length;
    for (let i = 0; i < rec.num_datums; i++) outputs.push({});
    for (const [key, b] of Object.entries(rec.fields ?? {})) {
      const offsets = int64s(b.offsets);
      const trailing: number[] = b.trailing_shape ?? [];
      const per = trailing.reduce((a: number, x: number) => a * x, 1);
      for (let i = 0; i < rec.num_datums; i++) {
        const slice = b.data.subarray(Number(offsets[i]), Number(offsets[i + 1]));
        const values = decodeValues(slice, b.dtype, `loss_fn_outputs[${start + i}].${key}`);
        outputs[start + i][key] = {
          data: values.values,
          dtype: values.dtype,
          shape: [values.values.length / per, ...trailing],
        };
      }
    }
  }
  return {
    loss_fn_output_type: m.loss_fn_output_type.split(":").at(-1)!,
    loss_fn_outputs: outputs,
    metrics: m.metrics ?? {},
  };
}

// ---- sample result ----

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
    sequences: (m.sequences ?? []).map((s) => ({
      stop_reason: (s.stop_reason ?? 0) === 1 ? "length" : "stop",
      tokens: Array.from(int32s(s.tokens ?? new Uint8Array())),
      logprobs: s.logprobs ? Array.from(float32s(s.logprobs)) : null,
    })),
  };
  if (m.prompt_logprobs && m.prompt_logprobs.length > 0) {
    res.prompt_logprobs = Array.from(
      float32s(m.prompt_logprobs),
      (x) => Number.isNaN(x) ? null : x,
    );
  }
  const t = m.topk_prompt_logprobs;
  if (t) {
    const ids = int32s(t.token_ids), lps = float32s(t.logprobs);
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

// ---- tensors and byte helpers ----

function encodeTensor(t: TensorData) {
  const dtype = t.dtype === "int64" ? DTYPE.INT64 : DTYPE.FLOAT32;
  const values = (xs: number[]) =>
    bytesOf(t.dtype === "int64" ? toInt64(xs) : Float32Array.from(xs));
  const shape = t.shape ?? [t.data.length];
  if (t.sparse_crow_indices) {
    return {
      sparse_csr: {
        values: values(t.data),
        crow_indices: bytesOf(toInt64(t.sparse_crow_indices)),
        col_indices: bytesOf(toInt64(t.sparse_col_indices ?? [])),
      },
      dtype,
      shape,
    };
  }
  return { dense: values(t.data), dtype, shape };
}
function decodeTensor(t: ProtoTensor, field: string): TensorData {
  const shape: number[] = t.shape ?? [];
  if (t.sparse_csr) {
    const v = decodeValues(t.sparse_csr.values, t.dtype, field);
    return {
      data: v.values,
      dtype: v.dtype,
      shape,
      sparse_crow_indices: Array.from(int64s(t.sparse_csr.crow_indices), Number),
      sparse_col_indices: Array.from(int64s(t.sparse_csr.col_indices), Number),
    };
  }
  const v = decodeValues(t.dense ?? new Uint8Array(), t.dtype, field);
  return { data: v.values, dtype: v.dtype, shape: shape.length ? shape : [v.values.length] };
}

function decodeValues(
  bytes: Uint8Array,
  dtype: number,
  field: string,
): { values: number[]; dtype: "int64" | "float32" } {
  switch (dtype) {
    case DTYPE.FLOAT32:
      return { values: Array.from(float32s(bytes)), dtype: "float32" };
    case DTYPE.INT64:
      return { values: Array.from(int64s(bytes), Number), dtype: "int64" };
    case DTYPE.INT32:
      return { values: Array.from(int32s(bytes)), dtype: "int64" };
    case DTYPE.BFLOAT16: {
      checkLength(bytes, 2, field);
      const u16 = new Uint16Array(aligned(bytes).buffer);
      const f32 = new Float32Array(u16.length);
      const u32 = new Uint32Array(f32.buffer);
      u16.forEach((h, i) => u32[i] = h << 16);
      return { values: Array.from(f32), dtype: "float32" };
    }
    default:
      throw new Error(`${field}: unsupported dtype ${dtype}`);
  }
}

function toInt64(xs: ArrayLike<number>): BigInt64Array {
  const out = new BigInt64Array(xs.length);
  for (let i = 0; i < xs.length; i++) out[i] = BigInt(Math.trunc(xs[i]));
  return out;
}

function bytesOf(a: Int32Array | Float32Array | BigInt64Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/**
 * Copies into a fresh buffer: byte fields may sit at unaligned offsets, and protobufjs may hand
 * out Node Buffers, whose `slice()` is a view into a shared pool rather than a copy.
 */
function aligned(bytes: Uint8Array): Uint8Array {
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  return copy;
}

function checkLength(bytes: Uint8Array, width: number, field: string): void {
  if (bytes.length % width !== 0) {
    throw new Error(
      `${field}: ${bytes.length} bytes is not a whole number of ${width}-byte values`,
    );
  }
}

function int32s(bytes: Uint8Array): Int32Array {
  checkLength(bytes, 4, "int32 array");
  return new Int32Array(aligned(bytes).buffer);
}

function float32s(bytes: Uint8Array): Float32Array {
  checkLength(bytes, 4, "float32 array");
  return new Float32Array(aligned(bytes).buffer);
}

function int64s(bytes: Uint8Array): BigInt64Array {
  checkLength(bytes, 8, "int64 array");
  return new BigInt64Array(aligned(bytes).buffer);
}

function concatBytes(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}
