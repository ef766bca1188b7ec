/**
 * A forward_backward's outputs read back: each datum's log-probs (1-D, or `[N, K]` for 2-D
 * cross-entropy targets) cut from its micro-batch's rows, and the loss's summed statistics as
 * Tinker's metrics.
 *
 * @module
 */

import type { MicroBatch } from "./batching.ts";
import type { LossDefinition } from "./losses.ts";
import type { ForwardBackwardResult, LearnerDatum, OutputTensor } from "./types.ts";

/** A micro-batch's outputs, read back. */
export type MicroBatchResult = { mb: MicroBatch; lp: Float32Array; sums: Float32Array };

/**
 * Width K of 2-D cross-entropy targets (the widest datum's), or 0 when every datum is 1-D.
 */
export function targetWidth(datums: readonly LearnerDatum[]): number {
  const widths = datums.map((d) => d.inputs.target_tokens.shape[1] ?? 0);
  return Math.max(0, ...widths);
}

/** Assembles the per-datum log-probs and the metrics from the micro-batches' outputs. */
export function collectResults(
  results: readonly MicroBatchResult[],
  datums: readonly LearnerDatum[],
  k: number,
  loss: LossDefinition,
): ForwardBackwardResult {
  const outputs = new Array<{ logprobs: OutputTensor }>(datums.length);
  const names = ["loss", ...loss.stats];
  const totals = new Float64Array(names.length);
  for (const { mb, lp, sums } of results) {
    sums.forEach((x, i) => totals[i] += x);
    mb.indices.forEach((idx, r) => {
      outputs[idx] = { logprobs: rowOutput(lp, datums[idx], r, mb, k) };
    });
  }
  const stats = Object.fromEntries(names.map((s, i) => [s, totals[i]]));
  return { outputs, metrics: { "loss:sum": stats.loss, ...loss.metrics(stats) } };
}

/** Datum `d`'s log-probs from row `r` of a micro-batch's `[B, T(, K)]` output. */
function rowOutput(
  lp: Float32Array,
  d: LearnerDatum,
  r: number,
  mb: MicroBatch,
  k: number,
): OutputTensor {
  const n = d.tokens.length;
  const shape = d.inputs.target_tokens.shape;
  if (k === 0) return { shape: [n], data: lp.slice(r * mb.seqLen, r * mb.seqLen + n) };
  const kd = shape[1] ?? 1;
  const data = new Float32Array(n * kd);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < kd; j++) data[i * kd + j] = lp[(r * mb.seqLen + i) * k + j];
  }
  return { shape: shape.length === 2 ? [n, kd] : [n], data };
}
