/**
 * Micro-batching on the host: splitting a request's datums into padded `[B, T]` blocks that
 * each fit comfortably in jax-js's 4 GiB wasm heap, and packing them into flat arrays.
 *
 * Shapes are bucketed to powers of two (`../shapes.ts`, which says why not finer): rows,
 * and sequence length capped at the model's context.
 *
 * @module
 */

import type { ModelConfig } from "../model/config.ts";
import { pow2Bucket, prevPow2 } from "../shapes.ts";
import type { LearnerDatum } from "./types.ts";

/** One micro-batch: which datums go in, and the padded block shape. */
export interface MicroBatch {
  /** Datum indices in the request, one per row (rows beyond these are padding). */
  indices: number[];
  /** Padded row count B (a power of two). */
  rows: number;
  /** Padded sequence length T (a power of two, or the model's context). */
  seqLen: number;
}

/**
 * Activation memory the micro-batch size is derived from. jax-js keeps every intermediate of
 * the forward pass for the backward pass, in float32; 1.5 GiB leaves room under the 4 GiB
 * heap for the weights, Adam's moments, the gradient accumulator and allocator slack.
 */
const ACTIVATION_BYTES = 1.5 * 2 ** 30;

/**
 * Estimated bytes of live activations per token of a training step at sequence length `t`.
 * Per layer it holds a few dozen `[d]`-vectors (LayerNorms, q/k/v/o, the 4×-wide MLP
 * pre- and post-GELU, their gradients) and a few `[H, t]` attention-score rows; then the
 * `[V]` logits with their softmax and gradient. Calibration (jax-js 0.1.25, full training,
 * byte vocab, d256, 6 layers, t = 256): RSS grows by ~765 KB per token from batch 4 to 16
 * (1.25 → 3.6 GB); this estimate gives 893 KB, on the safe side.
 */
function activationBytesPerToken(cfg: ModelConfig, t: number): number {
  const perLayer = 16 * cfg.dModel * (1 + cfg.mlpRatio) + 8 * cfg.nHeads * t;
  return 4 * (cfg.nLayers * perLayer + 8 * cfg.vocabSize);
}

/** Sequence-length bucket of a row of `n` tokens: a power of two ≥ 8, capped at the context. */
export function seqLenBucket(n: number, maxSeqLen: number): number {
  return pow2Bucket(n, 8, maxSeqLen);
}

/**
 * Most rows of length `seqLen` in one micro-batch: the power of two that keeps the estimated
 * activations under budget (at least 1). `tokenBudget` overrides the estimate with a fixed
 * number of tokens per micro-batch (for tests and tuning).
 */
export function maxRows(cfg: ModelConfig, seqLen: number, tokenBudget?: number): number {
  const tokens = tokenBudget ?? ACTIVATION_BYTES / activationBytesPerToken(cfg, seqLen);
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
