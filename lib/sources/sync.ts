/**
 * `sync` and `stream` execution: each step's groups are played with the step's sampler once the
 * previous step is done; `stream` gets each group as soon as it is judged (so a stream minibatch
 * trains only kept groups). What is played, and how it is judged, is the plan's (./plan.ts).
 *
 * @module
 */

import type { EpisodeGroup } from "../rl/types.ts";
import type { GroupSpec, Sampler } from "../rollout/mod.ts";
import {
  collectOptions,
  type GroupSource,
  type RolloutContext,
  type StepGroups,
} from "../trainer/mod.ts";
import type { Plan, PlayedGroups } from "./plan.ts";

/** `sync` and `stream`: each step's groups, played with that step's sampler. */
export class SyncRollouts<S extends GroupSpec, P extends PlayedGroups> implements GroupSource {
  #sampler: Sampler;
  #version: number;

  /** Plays `plan`'s groups with `ctx`'s settings, sampling with `sampler`. */
  constructor(
    readonly plan: Plan<S, P>,
    readonly ctx: RolloutContext,
    sampler: Sampler,
    version: number,
  ) {
    this.#sampler = sampler;
    this.#version = version;
  }

  setSampler(sampler: Sampler, version: number): void {
    this.#sampler = sampler;
    this.#version = version;
  }

  async take(
    step: number,
    onGroup?: (g: EpisodeGroup) => void,
    signal?: AbortSignal,
  ): Promise<StepGroups | null> {
    const start = performance.now() - this.ctx.t0;
    // Ctrl-C stops the step's rollouts at once; a partly played step is not trained.
    const options = { ...collectOptions(this.ctx, step, this.#version), signal };
    const play = await this.plan.play(this.plan.groupSpecs(step), this.#sampler, options, onGroup);
    if (signal?.aborted) return null;
    return {
      ...this.plan.stepGroups([play], step),
      spans: [{ name: "rollout", start, end: performance.now() - this.ctx.t0 }],
    };
  }

  async close(): Promise<void> {}
}
