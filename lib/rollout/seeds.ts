/**
 * The seeding of a training step's groups, named so that the trainer and a notebook playing
 * "step 1 of a run with seed 0" play the same episodes: group g of step s resets its env with
 * `envSeed(g)`, and `collectGroups` samples episode i (attempt a) of it with
 * `deriveSeed(samplerSeed, g, i, a)`. Every seed comes from `deriveSeed`, so none is a held-out
 * seed (`HELD_OUT_ENV_SEEDS`).
 *
 * @module
 */

import { deriveSeed } from "../util/random.ts";

/** The env and sampler seeds of one training step. */
export interface StepSeeds {
  /** Env seed of group `g` of the step. */
  envSeed: (g: number) => number;
  /** Base sampler seed of the step's collection (`CollectOptions.seed`). */
  samplerSeed: number;
}

/**
 * The seeds of step `step` (1-based, as the trainer counts) of a run seeded with `seed`.
 *
 * @example
 * const s = stepSeeds(0, 1);
 * await collectGroups([0, 1].map((g) => ({ makeEnv, envSeed: s.envSeed(g) })), sampler, {
 *   groupSize: 4, maxTokensPerTurn: 40, seed: s.samplerSeed,
 * });
 */
export function stepSeeds(seed: number, step: number): StepSeeds {
  return {
    envSeed: (g) => deriveSeed(seed, step, g),
    samplerSeed: deriveSeed(seed, step, -1),
  };
}
