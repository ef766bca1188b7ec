/**
 * Off-policy staleness: how many optimizer steps separate the weights that sampled a turn from
 * the weights being trained. Sampler version v carries the weights after v optimizer steps;
 * training step s updates the weights of version s − 1. The async trainer and the proxy use the
 * same rule.
 *
 * @module
 */

/**
 * Optimizer steps between a sampler version and the step that trains on its samples (0: on-policy).
 *
 * @example
 * offPolicySteps(3, 4); // 0: step 4 trains version 3's weights
 * offPolicySteps(2, 4); // 1
 */
export function offPolicySteps(samplerVersion: number, trainingStep: number): number {
  return trainingStep - 1 - samplerVersion;
}

/** Whether samples of `samplerVersion` are too old to train at `trainingStep`. */
export function isStale(
  samplerVersion: number,
  trainingStep: number,
  maxStepsOffPolicy: number,
): boolean {
  return offPolicySteps(samplerVersion, trainingStep) > maxStepsOffPolicy;
}

/**
 * The last training step that can still use samples started now with `samplerVersion`: pacing
 * starts a group only if it will be trained by then.
 *
 * @example
 * lastUsableStep(3, 1); // 5: steps 4 (on-policy) and 5 (one step off)
 */
export function lastUsableStep(samplerVersion: number, maxStepsOffPolicy: number): number {
  return samplerVersion + 1 + maxStepsOffPolicy;
}
