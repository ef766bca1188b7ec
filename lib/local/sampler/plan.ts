/**
 * How a sampling request is cut into device batches. Shapes are padded to power-of-two
 * buckets (`../shapes.ts`), because jax-js compiles a jitted function once per input shape
 * (0.3–0.6 s per shape at the bench size): a handful of buckets gets compiled once and then
 * reused by every request. Batches are also capped so that one call stays well under the
 * 4 GiB wasm heap.
 *
 * @module
 */

import type { ModelConfig } from "../model/config.ts";
import type { SampleJob } from "./types.ts";
import { pow2Bucket, prevPow2 } from "../shapes.ts";
import { queryBlock } from "../onnx/train_attention.ts";

/**
 * Most rows (continuations) decoded together; larger requests run in several groups. A
 * decode step costs about the same from 1 to 16 rows (kernel dispatch dominates), so wide
 * batches pay: `local/bench` measured ~1,000 tok/s at 16 rows, ~2,000 at 64, ~3,200 at
 * 128 and no better at 256.
 */
export const MAX_DECODE_ROWS = 128;
/**
 * Device bytes allowed for one group's KV cache (keys and values, all layers). A decode step
 * is one program whose new cache is allocated while the old one is still alive, so a group
 * holds twice this at its peak.
 */
const CACHE_BUDGET_BYTES = 128 * 2 ** 20;
/** Attention-score elements (`B·H·T·T`) allowed for one prefill chunk. */
const PREFILL_SCORE_BUDGET = 2 ** 23;
/**
 * Prompt positions per prefill run on ONNX Runtime, and the prefix cache's granularity. 32
 * keeps a turn's new tokens to one or two runs (a GuessTheNumber move and reply are about 30
 * tokens) and equals the shortest prefix worth caching.
 */
export const PREFILL_BLOCK = 32;
/** Prompt positions per prefill run (and the prefix cache's granularity) for `cfg`. */
export function prefillBlock(cfg: ModelConfig): number {
  // A windowed model's prompts run in the blocked prefill graph (`long_prefill.ts`), whose
  // numbers are a function of whole query blocks: cached prefixes end on one.
  return cfg.attentionWindow ? queryBlock(cfg.attentionWindow) : PREFILL_BLOCK;
}
/** Smallest padded prompt and cache length, so short requests share one shape. */
const MIN_LENGTH_BUCKET = 16;

/** One continuation: sample `sample` of job `job`. */
export interface RowRef {
  job: number;
  sample: number;
}

/** Rows decoded together, with the jobs (prompts) they need prefilled. */
export interface DecodeGroup {
  rows: RowRef[];
  /** Distinct jobs of `rows`, in order. */
  jobs: number[];
  /** Cache slots after prefill: room for the longest prompt plus one token, bucketed. */
  prefillSlots: number;
}

/**
 * Cache slots for positions `< n`, bucketed. The decode loop grows the cache through these
 * buckets as rows get longer, because a step's cost grows with the slot count (it rewrites
 * and attends over every slot), so short rows should not pay for the longest possible one.
 * A windowed model's cache is a ring of the window at any length: a decode step's token sees
 * itself and the `window − 1` positions before it, and overwrites the one that just left.
 */
export function slotBucket(cfg: ModelConfig, n: number): number {
  if (cfg.attentionWindow) return cfg.attentionWindow;
  return pow2Bucket(n, MIN_LENGTH_BUCKET, cfg.maxSeqLen);
}

/**
 * Splits jobs into decode groups of at most {@link maxDecodeRows} rows (a job with more
 * samples than that spans groups and is prefilled in each).
 */
export function planGroups(cfg: ModelConfig, jobs: readonly SampleJob[]): DecodeGroup[] {
  const longest = Math.max(...jobs.map((j) => j.prompt.length + j.maxTokens));
  const maxRows = maxDecodeRows(cfg, slotBucket(cfg, longest));
  const groups: RowRef[][] = [[]];
  jobs.forEach((job, j) => {
    for (let s = 0; s < job.numSamples; s++) {
      if (groups[groups.length - 1].length === maxRows) groups.push([]);
      groups[groups.length - 1].push({ job: j, sample: s });
    }
  });
  return groups.map((rows) => {
    const ids = [...new Set(rows.map((r) => r.job))];
    const longestPrompt = Math.max(...ids.map((j) => jobs[j].prompt.length));
    return { rows, jobs: ids, prefillSlots: slotBucket(cfg, longestPrompt + 1) };
  });
}

/**
 * Splits `ids` into consecutive chunks whose attention scores (`B·H·T·S` for `tokens` new
 * tokens per row over `slots` keys) fit the budget.
 */
export function scoreChunks(
  cfg: ModelConfig,
  ids: number[],
  tokens: number,
  slots: number,
): number[][] {
  const perChunk = Math.max(1, Math.floor(PREFILL_SCORE_BUDGET / (cfg.nHeads * tokens * slots)));
  const size = prevPow2(perChunk);
  const chunks: number[][] = [];
  for (let i = 0; i < ids.length; i += size) chunks.push(ids.slice(i, i + size));
  return chunks;
}

/** Rows per group: the cache budget at `slots` cache slots, a power of two, ≤ the cap. */
function maxDecodeRows(cfg: ModelConfig, slots: number): number {
  const bytesPerRow = 2 * cfg.nLayers * slots * cfg.dModel * 4;
  const fit = Math.max(1, Math.floor(CACHE_BUDGET_BYTES / bytesPerRow));
  return Math.min(MAX_DECODE_ROWS, prevPow2(fit));
}
