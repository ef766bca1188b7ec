/**
 * The compiled programs of the learner's step, one per stage of the model (embedding, one
 * block, head), so that a micro-batch runs as a chain of small programs instead of one.
 *
 * Why stages (measured, jax-js 0.1.25): a jitted program allocates every buffer it will need
 * when it is issued, before its first kernel runs, and frees them only once it has run, so a
 * program's peak is the sum of all its intermediates with no reuse inside it. One program for
 * a whole training step on `local/games` took 755 MiB for a single 1024-token row. A block's
 * program holds one layer's intermediates; the learner waits for each program before issuing
 * the next (`learner.ts`), so every block reuses the buffers the previous one freed.
 *
 * Backward recomputes each block's forward from its stored input (gradient checkpointing):
 * between programs only the `[B, T, D]` block inputs stay on the device. The weights are
 * arguments and every block has the same block-local names (`gpt.ts` `splitStages`), so one
 * compile per shape serves all blocks and new weights never recompile; what shapes the graph
 * (heads, LoRA scale, trainable, loss) is the static argument.
 *
 * @module
 */

import { jit, nn, numpy as np, valueAndGrad } from "@jax-js/jax";
import { int32Array, type ParamTree } from "../engine.ts";
import {
  blockForward,
  embedTokens,
  headLogits,
  splitStages,
  targetLogprobs,
} from "../model/gpt.ts";
import { foldLora, type FoldPredicate } from "../model/lora.ts";
import type { PackedBatch } from "./batching.ts";
import { type LossConfig, LOSSES, type LossFnName, type LossTokens } from "./losses.ts";
import type { Trainable } from "./types.ts";

/** Graph-shaping settings of a step: the static (compile-time) argument of the jitted fns. */
export type StepStatics = {
  nHeads: number;
  loraScale: number;
  rope: number;
  window: number;
  trainable: Trainable;
  lossFn: LossFnName;
};

/** What the head reads of a micro-batch: the targets and the loss's per-token inputs. */
export type HeadBatch = { targets: np.Array; loss: LossTokens };

/** One micro-batch on the device. */
export type DeviceBatch = HeadBatch & { tokens: np.Array };

/** The traced loss config and the static settings of one forward_backward call. */
export type StepArgs = { config: LossConfig; statics: StepStatics };

/** What the head program returns besides gradients. */
export type StepOutputs = {
  /** Target log-probs `[B, T]` / `[B, T, K]`. */
  lp: np.Array;
  /** `[loss, ...stats]` (stats in the loss's key order), one vector so it is one read. */
  sums: np.Array;
};

/** The trained and frozen weights of one stage, under stage-local names. */
export type Stage = { trained: ParamTree; frozen: ParamTree };

/**
 * Cuts the learner's trees into stages: the LoRA adapter (trained) over frozen base weights,
 * or, for full training, the base weights themselves (trained) with nothing frozen.
 */
export function stagesOf(
  trained: ParamTree,
  frozen: ParamTree,
  trainable: Trainable,
): { embed: Stage; blocks: Stage[]; head: Stage } {
  const s = trainable === "lora" ? splitStages(frozen, trained) : splitStages(trained, {});
  const of = (p: { base: ParamTree; lora: ParamTree }): Stage =>
    trainable === "lora" ? { trained: p.lora, frozen: p.base } : { trained: p.base, frozen: {} };
  return { embed: of(s.embed), blocks: s.blocks.map(of), head: of(s.head) };
}

/** The `[base, lora]` pair a stage runs with. */
function weightsOf(trained: ParamTree, frozen: ParamTree, s: StepStatics): [ParamTree, ParamTree] {
  return s.trainable === "lora"
    ? foldLora(frozen, trained, s.loraScale, foldWhenCheaper)
    : [trained, {}];
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

/** Embedding program: the first block's input `[B, T, D]`. */
export const embedProgram = jit(function embedProgram(
  trained: ParamTree,
  frozen: ParamTree,
  tokens: np.Array,
  s: StepStatics,
): np.Array {
  return embedTokens(s.trainable === "lora" ? frozen : trained, tokens);
}, { staticArgnums: [3] });

/** The embedding tables' sizes, static for {@link embedBackwardProgram}. */
export type EmbedShape = { vocab: number; context: number };

/**
 * Embedding backward (full training only): the tables' gradients given `dx [B, T, D]`, added to
 * `acc`. Written out rather than differentiated: the lookup is a one-hot product, and its
 * autodiff computes the token table's gradient as a `[D, V]` product, which jax-js 0.1.25 runs
 * far slower when V is not a multiple of 4; `oneHotᵀ @ dx` is the same sum as a `[V, D]`
 * product (`deno task bench embed_backward`: 2,271 against 48 ms at `local/tools`' 1441 tokens,
 * 482 against 21 ms at 743, 14 against 12 ms at 512, for 2,048 tokens).
 * The position table's gradient is `dx` summed over rows, zero past `T`.
 */
export const embedBackwardProgram = jit(function embedBackwardProgram(
  acc: ParamTree,
  tokens: np.Array,
  dx: np.Array,
  shape: EmbedShape,
): ParamTree {
  const [b, t, d] = dx.shape;
  const rows = nn.oneHot(tokens.reshape([b * t]), shape.vocab);
  const wte = np.matmul(np.transpose(rows), dx.ref.reshape([b * t, d]));
  if (!("wpe.weight" in acc)) { // a rotary model has no position table
    dx.dispose();
    return addTrees(acc, { "wte.weight": wte });
  }
  const wpe = np.pad(dx.sum(0), [[0, shape.context - t], [0, 0]]);
  return addTrees(acc, { "wte.weight": wte, "wpe.weight": wpe });
}, { staticArgnums: [3] });

/** Block program: one block's output. */
export const blockProgram = jit(function blockProgram(
  trained: ParamTree,
  frozen: ParamTree,
  x: np.Array,
  s: StepStatics,
): np.Array {
  return blockForward(...weightsOf(trained, frozen, s), x, s, 0);
}, { staticArgnums: [3] });

/**
 * Block backward program: recomputes the block from its input `x` and, given the output's
 * gradient `dy`, returns `acc` plus the gradient of its trained weights, and the gradient of `x`.
 */
export const blockBackwardProgram = jit(function blockBackwardProgram(
  trained: ParamTree,
  frozen: ParamTree,
  acc: ParamTree,
  x: np.Array,
  dy: np.Array,
  s: StepStatics,
): { acc: ParamTree; dx: np.Array } {
  const f = (t: ParamTree, xx: np.Array, fr: ParamTree, g: np.Array) =>
    blockForward(...weightsOf(t, fr, s), xx, s, 0).mul(g).sum();
  const [value, [grads, dx]] = valueAndGrad(f, { argnums: [0, 1] })(trained, x, frozen, dy);
  value.dispose();
  return { acc: addTrees(acc, grads), dx };
}, { staticArgnums: [5] });

/** The loss of the head stage on the last block's output, with log-probs and sums as aux. */
function headObjective(
  trained: ParamTree,
  x: np.Array,
  frozen: ParamTree,
  batch: HeadBatch,
  config: LossConfig,
  s: StepStatics,
): [np.Array, StepOutputs] {
  const logits = headLogits(...weightsOf(trained, frozen, s), x, s);
  const lp = targetLogprobs(logits, batch.targets);
  const { loss, stats } = LOSSES[s.lossFn].fn(lp.ref, batch.loss, config);
  const sums = np.stack([loss.ref, ...LOSSES[s.lossFn].stats.map((k) => stats[k])]);
  return [loss, { lp, sums }];
}

/**
 * Head program of a training pass: the outputs, `acc` plus the head's gradient, and the
 * gradient of `x`.
 */
export const headTrainProgram = jit(function headTrainProgram(
  trained: ParamTree,
  frozen: ParamTree,
  acc: ParamTree,
  x: np.Array,
  batch: HeadBatch,
  config: LossConfig,
  s: StepStatics,
): StepOutputs & { acc: ParamTree; dx: np.Array } {
  const f = (t: ParamTree, xx: np.Array, fr: ParamTree, b: HeadBatch, c: LossConfig) =>
    headObjective(t, xx, fr, b, c, s);
  const [[loss, out], [grads, dx]] = valueAndGrad(f, { argnums: [0, 1], hasAux: true })(
    trained,
    x,
    frozen,
    batch,
    config,
  );
  loss.dispose();
  return { ...out, acc: addTrees(acc, grads), dx };
}, { staticArgnums: [6] });

/** Head program of a forward-only pass: the same outputs, no gradient. */
export const headForwardProgram = jit(function headForwardProgram(
  trained: ParamTree,
  frozen: ParamTree,
  x: np.Array,
  batch: HeadBatch,
  config: LossConfig,
  s: StepStatics,
): StepOutputs {
  const [loss, out] = headObjective(trained, x, frozen, batch, config, s);
  loss.dispose();
  return out;
}, { staticArgnums: [5] });

/** `acc + grads`, key by key (both consumed): gradients add up across micro-batches. */
function addTrees(acc: ParamTree, grads: ParamTree): ParamTree {
  return Object.fromEntries(Object.keys(acc).map((k) => [k, acc[k].add(grads[k])]));
}

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
