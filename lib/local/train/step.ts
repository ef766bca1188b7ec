/**
 * The compiled step of the learner: the loss of one micro-batch as a function of the trained
 * weights, jitted once as a train step (value, gradient and the running gradient sum in one
 * program) and once forward-only. The weights are arguments, so new weights never recompile;
 * what shapes the graph (heads, LoRA scale, trainable, loss) is the static argument.
 *
 * @module
 */

import { jit, numpy as np, valueAndGrad } from "@jax-js/jax";
import { int32Array, type ParamTree } from "../engine.ts";
import { gptLogits, targetLogprobs } from "../model/gpt.ts";
import { foldLora, type FoldPredicate } from "../model/lora.ts";
import type { PackedBatch } from "./batching.ts";
import { type LossConfig, LOSSES, type LossFnName, type LossTokens } from "./losses.ts";
import type { Trainable } from "./types.ts";

/** Graph-shaping settings of a step: the static (compile-time) argument of the jitted fns. */
export type StepStatics = {
  nHeads: number;
  loraScale: number;
  trainable: Trainable;
  lossFn: LossFnName;
};

/** One micro-batch on the device. */
export type DeviceBatch = { tokens: np.Array; targets: np.Array; loss: LossTokens };

/** The traced loss config and the static settings of one forward_backward call. */
export type StepArgs = { config: LossConfig; statics: StepStatics };

/** What a jitted step returns besides gradients. */
export type StepOutputs = {
  /** Target log-probs `[B, T]` / `[B, T, K]`. */
  lp: np.Array;
  /** `[loss, ...stats]` (stats in the loss's key order), one vector so it is one read. */
  sums: np.Array;
};

/**
 * The loss of one micro-batch as a function of the trained tree (argument 0), returning the
 * loss and, as auxiliary outputs, the log-probs and metric sums.
 */
function objective(
  trained: ParamTree,
  frozen: ParamTree,
  batch: DeviceBatch,
  config: LossConfig,
  s: StepStatics,
): [np.Array, StepOutputs] {
  const spec = { nHeads: s.nHeads, loraScale: s.loraScale };
  const logits = s.trainable === "lora"
    ? gptLogits(...foldLora(frozen, trained, s.loraScale, foldWhenCheaper), batch.tokens, spec)
    : gptLogits(trained, null, batch.tokens, spec);
  const lp = targetLogprobs(logits, batch.targets);
  const { loss, stats } = LOSSES[s.lossFn].fn(lp.ref, batch.loss, config);
  const sums = np.stack([loss.ref, ...LOSSES[s.lossFn].stats.map((k) => stats[k])]);
  return [loss, { lp, sums }];
}

/**
 * Fold an adapter into its weight when that is cheaper to train. Per token, an unfolded adapter
 * on an `[in, out]` linear costs about `6·r·(in + out)` flops over forward and backward (plus
 * several small kernels); folded, it costs the weight gradient `2·in·out` of `W'` (then tiny
 * `dA = s·dW'·Bᵀ`, `dB = s·Aᵀ·dW'`). So fold when `in·out / (in + out) < 3r`, e.g. every
 * rank-32 adapter of a d128 model. The decision depends only on shapes, so it is fixed per
 * compile, and a fresh adapter (B = 0) still gives exactly the base model.
 */
const foldWhenCheaper: FoldPredicate = (inF, rank, outF) => (inF * outF) / (inF + outF) < 3 * rank;

/** Train step: value, gradient, and `acc + gradient` in one compiled program. */
export const trainMicroBatch = jit(function trainMicroBatch(
  trained: ParamTree,
  frozen: ParamTree,
  acc: ParamTree,
  batch: DeviceBatch,
  config: LossConfig,
  s: StepStatics,
): StepOutputs & { acc: ParamTree } {
  const f = (t: ParamTree, fr: ParamTree, b: DeviceBatch, c: LossConfig) =>
    objective(t, fr, b, c, s);
  const [[loss, out], grads] = valueAndGrad(f, { hasAux: true })(trained, frozen, batch, config);
  loss.dispose();
  const sum = Object.fromEntries(Object.keys(acc).map((k) => [k, acc[k].add(grads[k])]));
  return { ...out, acc: sum };
}, { staticArgnums: [5] });

/** Forward-only step: the same loss and outputs, no gradient. */
export const forwardMicroBatch = jit(function forwardMicroBatch(
  trained: ParamTree,
  frozen: ParamTree,
  batch: DeviceBatch,
  config: LossConfig,
  s: StepStatics,
): StepOutputs {
  const [loss, out] = objective(trained, frozen, batch, config, s);
  loss.dispose();
  return out;
}, { staticArgnums: [4] });

/** Zeros with the keys and shapes of `params` (borrowed). */
export function zerosLike(params: ParamTree): ParamTree {
  return Object.fromEntries(Object.entries(params).map(([k, p]) => [k, np.zeros(p.shape)]));
}

/** Copies a packed micro-batch onto the device. */
export function toDeviceBatch(p: PackedBatch): DeviceBatch {
  const [rows, t] = p.shape;
  const f32 = (x: Float32Array<ArrayBuffer>) => np.array(x, { shape: [rows, t] });
  const loss: LossTokens = { weights: np.array(p.weights, { shape: p.shape }) };
  if (p.logprobs) loss.logprobs = f32(p.logprobs);
  if (p.advantages) loss.advantages = f32(p.advantages);
  return { tokens: int32Array(p.tokens, [rows, t]), targets: int32Array(p.targets, p.shape), loss };
}
