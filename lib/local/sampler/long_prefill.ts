/**
 * The prefill of a windowed model's prompts (`local/long`): each prompt runs in chunks of
 * thousands of positions through the blocked sliding-window graph (`../onnx/gpt_graph.ts`'s
 * `prefill` layout, `../onnx/train_attention.ts`), each chunk after the `window` keys and values
 * before it, so a 55k-token prompt costs a few large runs instead of hundreds of small ones
 * over the ring cache. Only what decoding and the prefix cache need stays: the last `window`
 * positions, written into the prompt's ring (`host_cache.ts`).
 *
 * A position's numbers depend only on its query block's tokens and the keys before it, never
 * on where a chunk starts or which rows share the run. Prompts start at a block boundary (0 or
 * a cached prefix of whole blocks), so a prompt continued from the prefix cache gives the same
 * numbers as the prompt run whole, as `host_generate.ts` requires.
 *
 * @module
 */

import { MASKED } from "../onnx/mask.ts";
import type { GptSession } from "../onnx/session.ts";
import { HostKvCache } from "./host_cache.ts";
import { prefillBlock } from "./plan.ts";
import type { PrefixHit } from "./prefix_cache.ts";

/**
 * Prompt positions (summed over rows) per prefill run. Small enough that a run's attention
 * weights (`positions · heads · (window + block)` floats, 2.6 MB for `local/long`) stay in the
 * CPU's caches: on a 55k-token prompt, runs of 512 positions took 4.4 s where runs of 2,048
 * took 8.0 s and runs of 8,192 took 13 s (docs/sampling-engine.md).
 */
export const LONG_PREFILL_TOKENS = 512;

/** A prompt to prefill: its cached whole blocks, if any, and whether it wants every position. */
export interface WindowPrompt {
  prompt: Int32Array;
  hit?: PrefixHit<HostKvCache>;
  allPositions: boolean;
}

/** A prefilled prompt: its ring (row `row` of `cache`), first draw, and what it stores. */
export interface WindowRun {
  cache: HostKvCache;
  row: number;
  length: number;
  /** The log-distribution after the last prompt token. */
  firstDraw: Float32Array;
  /** Every position's log-distribution, for a prompt that wants prompt logprobs. */
  positions?: Float32Array[];
  /** The ring after the prompt's whole blocks (the prefix cache's entry), unless it is empty. */
  entry?: HostKvCache;
}

/**
 * Prefills `prompts`, which all start at the same block (their hits have one length), in
 * chunks of up to {@link LONG_PREFILL_TOKENS} positions over all rows.
 */
export async function prefillWindowed(
  gpt: GptSession,
  prompts: WindowPrompt[],
): Promise<WindowRun[]> {
  const cfg = gpt.config, w = cfg.attentionWindow!, c = prefillBlock(cfg), v = cfg.vocabSize;
  const n = prompts.length, from = prompts[0].hit?.length ?? 0;
  const ring = new HostKvCache(cfg, n, w);
  // The window before each row's next chunk, in order of position: slot j holds `start − W + j`.
  const past = new HostKvCache(cfg, n, w);
  const pastBias = new Float32Array(n * w).fill(MASKED);
  prompts.forEach((p, i) => {
    if (!p.hit) return;
    // Slot 0 (position from − W) is never visible to the chunk, and a ring has lost it.
    for (let j = 1; j < w; j++) {
      const position = from - w + j;
      if (position < 0) continue;
      past.copySlots(p.hit.cache, 0, position % w, i, j, 1);
      pastBias[i * w + j] = 0;
    }
  });
  const runs: WindowRun[] = prompts.map((p, i) => ({
    cache: ring,
    row: i,
    length: p.prompt.length,
    firstDraw: new Float32Array(0),
    positions: p.allPositions ? new Array<Float32Array>(p.prompt.length) : undefined,
  }));
  const longest = Math.max(...prompts.map((p) => p.prompt.length));
  for (let start = from; start < longest;) {
    const rows = prompts.flatMap((p, i) => p.prompt.length > start ? [i] : []);
    const perRow = Math.max(c, Math.floor(LONG_PREFILL_TOKENS / rows.length / c) * c);
    const t = Math.min(perRow, Math.ceil((longest - start) / c) * c);
    const heads = rows.some((i) => prompts[i].allPositions) ? t : 1;
    const out = await runChunk(gpt, prompts, rows, past, pastBias, start, t, heads);
    // Keys and values of positions start − W .. start + t − 1.
    const span = new HostKvCache(cfg, rows.length, w + t, out);
    rows.forEach((i, k) => {
      const { prompt } = prompts[i], real = Math.min(t, prompt.length - start);
      const dist = (p: number) => {
        const at = heads === 1 ? k : k * heads + p;
        return out.logprobs.slice(at * v, (at + 1) * v);
      };
      const positions = runs[i].positions;
      if (positions) { for (let p = 0; p < real; p++) positions[start + p] = dist(p); }
      const end = start + real;
      /** Writes positions `max(0, to − W) .. to − 1` of this chunk's span into `dst`. */
      const keep = (dst: HostKvCache, row: number, to: number) => {
        const first = Math.max(0, to - w);
        dst.write(span, k, row, first, to - first, first - (start - w));
      };
      if (end === prompt.length) {
        runs[i].firstDraw = dist(real - 1);
        keep(ring, i, end);
        const whole = Math.floor(end / c) * c;
        if (whole > from) {
          const entry = new HostKvCache(cfg, 1, w);
          keep(entry, 0, whole);
          runs[i].entry = entry;
        }
      } else {
        past.copySlots(span, k, t, i, 0, w);
        pastBias.fill(0, i * w, (i + 1) * w);
      }
    });
    start += t;
  }
  return runs;
}

/**
 * One prefill run: positions `start .. start + t − 1` of each of `rows` (right-padded), after
 * their windows in `past`. The LM head runs at every position with `heads` = `t`, else at a
 * row's last prompt position if it falls in the chunk.
 */
function runChunk(
  gpt: GptSession,
  prompts: WindowPrompt[],
  rows: number[],
  past: HostKvCache,
  pastBias: Float32Array,
  start: number,
  t: number,
  heads: number,
) {
  const cfg = gpt.config, w = cfg.attentionWindow!, n = rows.length;
  const window = n === past.rows ? past : past.remap(cfg, rows, w);
  const ids = new BigInt64Array(n * t), positions = new BigInt64Array(n * t);
  const headIndex = new BigInt64Array(n * heads);
  const bias = new Float32Array(n * w);
  rows.forEach((i, k) => {
    const { prompt } = prompts[i], real = Math.min(t, prompt.length - start);
    bias.set(pastBias.subarray(i * w, (i + 1) * w), k * w);
    for (let p = 0; p < t; p++) {
      ids[k * t + p] = BigInt(p < real ? prompt[start + p] : 0);
      positions[k * t + p] = BigInt(Math.min(start + p, cfg.maxSeqLen - 1));
    }
    if (heads === 1) headIndex[k] = BigInt(real - 1);
    else for (let p = 0; p < heads; p++) headIndex[k * heads + p] = BigInt(p);
  });
  return gpt.prefill({
    rows: n,
    tokens: t,
    ids,
    positions,
    headIndex,
    heads,
    pastBias: bias,
    pastKeys: window.keys,
    pastValues: window.values,
  });
}
