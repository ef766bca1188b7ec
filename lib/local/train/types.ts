/**
 * Host-side types of the learner's API: what the server hands to `Learner.forwardBackward`
 * and `Learner.optimStep` after decoding the wire (JSON or protobuf).
 *
 * @module
 */

import type { NamedTensors } from "../tensors.ts";

/**
 * One `loss_fn_inputs` tensor, dense and row-major. Wire `int64` arrives as `Int32Array`,
 * `float32` as `Float32Array` (token ids fit in int32 and jax-js has no int64).
 */
export interface LearnerTensor {
  shape: number[];
  data: Float32Array | Int32Array;
}

/**
 * One training example: the flattened `model_input` tokens and its `loss_fn_inputs`.
 *
 * @example
 * const d: LearnerDatum = {
 *   tokens: Int32Array.from([1, 2, 3]),
 *   inputs: {
 *     target_tokens: { shape: [3], data: Int32Array.from([2, 3, 4]) },
 *     weights: { shape: [3], data: Float32Array.from([0, 1, 1]) },
 *   },
 * };
 */
export interface LearnerDatum {
  tokens: Int32Array;
  inputs: Record<string, LearnerTensor>;
}

/**
 * Tinker's `AdamParams`, the protocol's one definition, so the server passes the request body
 * through. `weight_decay` is decoupled (torch.optim.AdamW), `grad_clip_norm` 0 turns clipping
 * off.
 */
export type { AdamParams } from "../../protocol/mod.ts";

/** Tinker SDK 0.25.0 defaults of {@link AdamParams} (the protocol's, one definition). */
export { ADAM_DEFAULTS } from "../../protocol/mod.ts";

/**
 * Adam's state on the host, for checkpoints: the moment tensors (named
 * `exp_avg.<param>` and `exp_avg_sq.<param>`, as torch calls them) and the step count that
 * the bias correction needs.
 */
export interface OptimizerState {
  tensors: NamedTensors;
  step: number;
}

/** Host copy of one datum's output tensor, `[N]` or `[N, K]`. */
export interface OutputTensor {
  shape: number[];
  data: Float32Array;
}

/** What `forward`/`forward_backward` returns: per-datum log-probs and the metrics. */
export interface ForwardBackwardResult {
  outputs: Array<{ logprobs: OutputTensor }>;
  /** Keys are `<name>:<reduction>` (the SDK splits on the one colon), e.g. `loss:sum`. */
  metrics: Record<string, number>;
}

/** Which weights a learner trains: a LoRA adapter over frozen base weights, or all of them. */
export type Trainable = "lora" | "full";
