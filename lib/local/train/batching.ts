/**
 * Micro-batching on the host: splitting a request's datums into padded `[B, T]` blocks whose
 * stage programs each fit a fixed byte budget, and packing them into flat arrays.
 *
 * Shapes are bucketed (`../shapes.ts`, which says why not finer): rows to powers of two,
 * sequence lengths to powers of two and, above 64, their 1.5 multiples, capped at the model's
 * context.
 *
 * @module
 */

import type { ModelConfig } from "../model/config.ts";
import { halfOctaveBucket, pow2Bucket, prevPow2 } from "../shapes.ts";
import type { LearnerDatum } from "./types.ts";

/** One micro-batch: which datums go in, and the padded block shape. */
export interface MicroBatch {
  /** Datum indices in the request, one per row (rows beyond these are padding). */
  indices: number[];
  /** Padded row count B (a power of two). */
  rows: number;
  /** Padded sequence length T (a bucket of `seqLenBucket`, or the model's context). */
  seqLen: number;
}

/**
 * Device bytes one stage program of a micro-batch may allocate. jax-js allocates a program's
 * buffers all at once and reuses a freed buffer only for the same size (`../heap.ts`); with
 * power-of-two rows and lengths of 2^k or 3·2^k every size is one of two model constants times
 * a power of two, so the heap over all shapes stays under about four times the largest program
 * (tested in `tests/local/heap_test.ts`).
 */
export const PROGRAM_BYTES = 256 * 2 ** 20;

/**
 * Estimated bytes a stage program allocates per token at sequence length `t`: the larger of a
 * block's backward (its forward recomputed, then its gradients: a few dozen `[D]`- and
 * `[4D]`-vectors and eight `[H, t]` attention rows) and the head's (logits, log-softmax, the
 * target mask and their gradients), plus the block inputs kept between programs.
 * Calibration (jax-js 0.1.25, `local/games`, LoRA rank 32, `bench/heap_probe.ts learner`): one
 * 1024-token row allocated 186 MiB, two 372, eight 256-token rows 177; this estimate gives
 * 188, 376 and 186.
 */
export function programBytesPerToken(cfg: ModelConfig, t: number): number {
  const block = 24 * cfg.dModel * (1 + cfg.mlpRatio) + 8 * cfg.nHeads * t;
  const head = 16 * cfg.vocabSize + 8 * cfg.dModel;
  return 4 * (Math.max(block, head) + (cfg.nLayers + 1) * cfg.dModel);
}

/**
 * Sequence-length bucket of a row of `n` tokens: a power of two ≥ 8 or, above 64, 1.5 times one
 * (96, 192, …), capped at the context.
 */
export function seqLenBucket(n: number, maxSeqLen: number): number {
  return halfOctaveBucket(n, 8, maxSeqLen);
}

/**
 * Most rows of length `seqLen` in one micro-batch: the power of two that keeps every stage
 * program under {@link PROGRAM_BYTES} (at least 1). `tokenBudget` overrides the estimate with
 * a fixed number of tokens per micro-batch (for tests and tuning).
 */
export function maxRows(cfg: ModelConfig, seqLen: number, tokenBudget?: number): number {
  const tokens = tokenBudget ?? PROGRAM_BYTES / programBytesPerToken(cfg, seqLen);
  return prevPow2(Math.max(1, Math.floor(tokens / seqLen)));
}

/**
 * Splits datums into micro-batches. Datums are sorted by length (longest first) so rows of
 * similar length share a block and padding stays small; each block's T is the bucket of its
 * longest row, and it takes as many rows as fit in the budget at that T.
 */
export function planMicroBatches(
  cfg: ModelConfig,
  lengths: readonly number[],
  tokenBudget?: number,
): MicroBatch[] {
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[b] - lengths[a] || a - b);
  const out: MicroBatch[] = [];
  for (let start = 0; start < order.length;) {
    const seqLen = seqLenBucket(lengths[order[start]], cfg.maxSeqLen);
    const cap = maxRows(cfg, seqLen, tokenBudget);
    const indices = order.slice(start, start + cap);
    out.push({ indices, rows: pow2Bucket(indices.length), seqLen });
    start += indices.length;
  }
  return out;
}

/** Flat host arrays of one micro-batch; per-token arrays are `[B, T]` or `[B, T, K]`. */
export interface PackedBatch {
  tokens: Int32Array<ArrayBuffer>;
  targets: Int32Array<ArrayBuffer>;
  /** Per-token loss weight, 0 at padding (see losses.ts). */
  weights: Float32Array<ArrayBuffer>;
  logprobs?: Float32Array<ArrayBuffer>;
  advantages?: Float32Array<ArrayBuffer>;
  /** Shape of the per-token arrays. */
  shape: number[];
}

/**
 * Packs a micro-batch's datums into zero-padded arrays. `k` is the width of 2-D
 * cross-entropy targets (0 for 1-D); a 1-D datum in a 2-D batch fills column 0. Without a
 * `weights` input (RL losses) real positions get weight 1.
 */
export function packMicroBatch(
  datums: readonly LearnerDatum[],
  mb: MicroBatch,
  k: number,
  rlInputs: boolean,
): PackedBatch {
  const { rows, seqLen: t } = mb;
  const width = Math.max(1, k);
  const tokens = new Int32Array(rows * t);
  const targets = new Int32Array(rows * t * width);
  const weights = new Float32Array(rows * t * width);
  const logprobs = rlInputs ? new Float32Array(rows * t) : undefined;
  const advantages = rlInputs ? new Float32Array(rows * t) : undefined;
  mb.indices.forEach((idx, r) => {
    const d = datums[idx];
    const n = d.tokens.length;
    tokens.set(d.tokens, r * t);
    const tgt = d.inputs.target_tokens, w = d.inputs.weights;
    const kd = tgt.shape[1] ?? 1;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < kd; j++) {
        const at = (r * t + i) * width + j;
        targets[at] = tgt.data[i * kd + j];
        weights[at] = w ? w.data[i * kd + j] : 1;
      }
    }
    logprobs?.set(d.inputs.logprobs.data, r * t);
    advantages?.set(d.inputs.advantages.data, r * t);
  });
  const shape = k > 0 ? [rows, t, k] : [rows, t];
  return { tokens, targets, weights, logprobs, advantages, shape };
}
