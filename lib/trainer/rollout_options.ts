/**
 * The rollout options a run plays with, shared by its training rollouts (the schedulers of
 * lib/sources/) and its held-out evaluation (./evaluate.ts), so both play episodes alike: token
 * limits, temperature, concurrency, failure policy, tool declarations. `prepareRun` resolves
 * them from the config ({@link RolloutSettings}); nothing here reads the config.
 *
 * Env seeds and sampler seeds are functions of (seed, step, group) in every mode. On resume, what
 * was in flight at the checkpoint is regenerated: the same groups (same env and sampler seeds),
 * sampled with the resumed weights.
 *
 * @module
 */

import type { Renderer } from "../renderers/types.ts";
import type { CollectOptions } from "../rollout/mod.ts";
import { stepSeeds } from "../rollout/seeds.ts";

/** What a run's rollouts play with, resolved from its config by `prepareRun`. */
export interface RolloutSettings {
  /** The one environment's id (`rollout.env_id`). */
  envId: string;
  /** The run's seed: env and sampler seeds are functions of (seed, step, group). */
  seed: number;
  /** Groups each step trains. */
  groupsPerBatch: number;
  /** When groups are played: `sync`, `stream` or `async` (`pipeline.mode`). */
  mode: "sync" | "stream" | "async";
  /** How many optimizer steps a group's sampler may lag the step that trains it. */
  maxStepsOffPolicy: number;
  /** What every collection shares; the step's sampler seed and version are added per step. */
  collect: Omit<CollectOptions, "seed" | "samplerVersion" | "renderer"> & {
    maxConcurrency: number;
    temperature: number;
  };
}

/** What a run's rollouts are played with. */
export interface RolloutContext {
  /** The rollout settings. */
  rollouts: RolloutSettings;
  /** The policy's chat format. */
  renderer: Renderer;
  /** `performance.now()` at the run's start: spans are measured from it. */
  t0: number;
}

/** Collection options of a step's groups sampled by sampler `version`. */
export function collectOptions(
  ctx: RolloutContext,
  step: number,
  version: number,
): CollectOptions {
  return {
    ...ctx.rollouts.collect,
    seed: stepSeeds(ctx.rollouts.seed, step).samplerSeed,
    renderer: ctx.renderer,
    samplerVersion: version,
  };
}
