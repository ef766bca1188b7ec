/**
 * Micro-batching on the host: splitting a request's datums into padded `[B, T]` blocks whose
 * training-graph runs each fit a memory budget, and packing them into flat arrays.
 *
 * ONNX Runtime runs any shape without a compile, so blocks are cut close: `T` is the longest
 * row rounded up to a multiple of 16, and `B` is the rows that fit, not a power of two.
 *
 * @module
 */

import type { ModelConfig } from "../model/config.ts";
import type { LearnerDatum } from "./types.ts";

/** One micro-batch: which datums go in, and the padded block shape. */
export interface MicroBatch {
  /** Datum indices in the request, one per row. */
  indices: number[];
  /** Row count B. */
  rows: number;
  /** Padded sequence length T ({@link seqLenBucket} of the longest row). */
  seqLen: number;
}

/** Bytes of activations one run of the training graph may hold (a single row may exceed it). */
export const RUN_BYTES = 2 ** 30;

/**
 * Estimated bytes a training-graph run keeps per token at sequence length `t`: what each block
 * keeps for its backward (about 36 `[D]`-vectors: inputs, normalised inputs, q/k/v in both
 * layouts, the MLP's `[4D]` intermediates) plus its attention weights (`H` rows of the keys a
 * query sees: `t`, or a window's `window + 64`), and the head's few `[V]` rows.
 */
export function bytesPerToken(cfg: ModelConfig, t: number): number {
  const keys = cfg.attentionWindow ? Math.min(t, cfg.attentionWindow + 64) : t;
  return 4 * (cfg.nLayers * (36 * cfg.dModel + cfg.nHeads * keys) + 6 * cfg.vocabSize);
}

/** Sequence length of a block whose longest row has `n` tokens: `n` up to a multiple of 16. */
export function seqLenBucket(n: number, maxSeqLen: number): number {
  return Math.min(Math.max(16, Math.ceil(n / 16) * 16), Math.max(n, maxSeqLen));
}

/**
 * Most rows of length `seqLen` in one micro-batch: those that keep a run under
 * {@link RUN_BYTES} (at least 1). `tokenBudget` overrides the estimate with a fixed number of
 * tokens per micro-batch (for tests and tuning).
 */
export function maxRows(cfg: ModelConfig, seqLen: number, tokenBudget?: number): number {
  const tokens = tokenBudget ?? RUN_BYTES / bytesPerToken(cfg, seqLen);
  return Math.max(1, Math.floor(tokens / seqLen));
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
    out.push({ indices, rows: indices.length, seqLen });
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
