/**
 * `sync` and `stream` execution: each step's groups are collected with the step's sampler once
 * the previous step is done; `stream` gets each group as it finishes. With an environment mix,
 * the step's groups span its environments in one collection, each judged by its environment's
 * rules as soon as it is played (so a stream minibatch trains only kept groups).
 *
 * @module
 */

import type { EpisodeGroup } from "../rl/types.ts";
import { collectGroups, type Sampler } from "../rollout/mod.ts";
import type { EnvironmentMix } from "./mix.ts";
import {
  collectionMetrics,
  collectOptions,
  failedEpisodes,
  groupSpec,
  type RolloutContext,
} from "./rollouts.ts";
import type { GroupSource, StepGroups } from "./source.ts";

/** `sync` and `stream`: each step's groups, collected with that step's sampler. */
export class SyncRollouts implements GroupSource {
  #sampler: Sampler;
  #version: number;

  constructor(
    readonly ctx: RolloutContext,
    sampler: Sampler,
    version: number,
    readonly mix: EnvironmentMix | null = null,
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
    const spans = () => [{ name: "rollout", start, end: performance.now() - this.ctx.t0 }];
    if (this.mix) {
      const play = await this.mix.play(this.mix.groupSpecs(step), this.#sampler, options, onGroup);
      if (signal?.aborted) return null;
      return { ...this.mix.stepGroups([play], step), spans: spans() };
    }
    const specs = Array.from(
      { length: this.ctx.cfg.rollout.groups_per_batch },
      (_, g) => groupSpec(this.ctx, step, g),
    );
    const res = await collectGroups(specs, this.#sampler, { ...options, onGroup });
    if (signal?.aborted) return null;
    return {
      groups: res.groups,
      failed: failedEpisodes(res, specs, this.ctx.cfg.rollout.env_id),
      metrics: collectionMetrics([res], res.groups, step),
      spans: spans(),
    };
  }

  async close(): Promise<void> {}
}
