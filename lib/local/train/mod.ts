/**
 * The local backend's training: Tinker's losses, request validation, AdamW and the
 * {@link Learner} that ties them to the GPT.
 *
 * @module
 */

export { Learner, type LearnerOptions } from "./learner.ts";
export { validateAdamParams, validateForwardBackward } from "./validate.ts";
export { isLossFnName, LOSS_FN_NAMES, LOSSES, type LossFnName } from "./losses.ts";
export {
  ADAM_DEFAULTS,
  type AdamParams,
  type ForwardBackwardResult,
  type LearnerDatum,
  type LearnerTensor,
  type OptimizerState,
  type Trainable,
} from "./types.ts";
