/**
 * `async` execution: rollout workers keep playing groups with the newest sampler while the
 * trainer trains. **Pacing**: a group is started only if the step that will train it is at most
 * `max_steps_off_policy` optimizer steps ahead of the sampler's weights, so in a steady state no
 * group goes stale and no paid rollout is thrown away. Groups are trained in their index order
 * (step s trains groups `(s−1)·B … s·B−1`), which keeps that bound and makes the data cursor a
 * function of the step. A stale group (only possible if pacing is bypassed) is replayed with the
 * current sampler and counted. With an environment mix, each group is the mix's spec of that
 * (step, index), judged by its environment's rules as in `sync` mode.
 *
 * @module
 */

import type { EpisodeGroup } from "../rl/types.ts";
import { lastUsableStep, offPolicySteps } from "../rl/staleness.ts";
import { collectGroups, type CollectResult, type GroupSpec, type Sampler } from "../rollout/mod.ts";
import type { FailedEpisode, GroupSource, StepGroups } from "./source.ts";
import type { EnvironmentMix, MixGroupSpec, MixPlay } from "./mix.ts";
import {
  collectionMetrics,
  collectOptions,
  episodeConcurrency,
  failedEpisodes,
  groupSpec,
  type RolloutContext,
} from "./rollouts.ts";

interface Flight {
  step: number;
  g: number;
  version: number;
  start: number;
  done: Promise<{ res: CollectResult; play: MixPlay | null; spec: GroupSpec; end: number }>;
}

/** `async`: groups played ahead with the newest sampler, paced by `max_steps_off_policy`. */
export class AsyncRollouts implements GroupSource {
  #sampler: Sampler;
  #version: number;
  readonly #perStep: number;
  readonly #maxInFlight: number;
  readonly #lastStep: number;
  /** The next group to start, as (step, group). */
  #next: { step: number; g: number };
  #inFlight = 0;
  readonly #flights = new Map<string, Flight>();
  #waiters: (() => void)[] = [];
  #closed = false;
  /** Groups replayed because they went stale (pacing bypassed). */
  requeued = 0;
  /** The mix's specs of the steps in flight (a step's draws are made once). */
  readonly #mixSpecs = new Map<number, MixGroupSpec[]>();

  constructor(
    readonly ctx: RolloutContext,
    sampler: Sampler,
    version: number,
    firstStep: number,
    readonly mix: EnvironmentMix | null = null,
  ) {
    this.#sampler = sampler;
    this.#version = version;
    this.#perStep = ctx.cfg.rollout.groups_per_batch;
    // As many groups in flight as the episode concurrency allows, at least one.
    this.#maxInFlight = Math.max(
      1,
      Math.floor(episodeConcurrency(ctx.cfg) / ctx.cfg.rollout.group_size),
    );
    this.#lastStep = ctx.cfg.max_steps;
    this.#next = { step: firstStep, g: 0 };
    this.#pump();
  }

  setSampler(sampler: Sampler, version: number): void {
    this.#sampler = sampler;
    this.#version = version;
    this.#pump();
  }

  async take(step: number, onGroup?: (g: EpisodeGroup) => void): Promise<StepGroups> {
    const results: CollectResult[] = [];
    const plays: MixPlay[] = [];
    const groups: EpisodeGroup[] = [];
    const failed: FailedEpisode[] = [];
    const spans: StepGroups["spans"] = [];
    let requeued = 0;
    for (let g = 0; g < this.#perStep; g++) {
      for (;;) {
        const flight = await this.#flight(step, g);
        const { res, play, spec, end } = await flight.done;
        this.#flights.delete(key(step, g));
        if (offPolicySteps(flight.version, step) > this.ctx.cfg.pipeline.max_steps_off_policy) {
          // Pacing should prevent this; if it did not, replay the group rather than train stale.
          requeued++;
          this.requeued++;
          this.#start(step, g);
          continue;
        }
        spans.push({ name: `rollout g${g}`, start: flight.start, end });
        if (play) {
          plays.push(play);
          for (const group of play.kept.values()) onGroup?.(group);
          break;
        }
        results.push(res);
        failed.push(...failedEpisodes(res, [spec], this.ctx.cfg.rollout.env_id));
        for (const group of res.groups) {
          groups.push(group);
          onGroup?.(group);
        }
        break;
      }
    }
    this.#mixSpecs.delete(step);
    if (this.mix) {
      const judged = this.mix.stepGroups(plays, step);
      return { ...judged, metrics: { ...judged.metrics, "async/requeued": requeued }, spans };
    }
    return {
      groups,
      failed,
      metrics: { ...collectionMetrics(results, groups, step), "async/requeued": requeued },
      spans,
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#waiters.splice(0).forEach((w) => w());
    await Promise.allSettled([...this.#flights.values()].map((f) => f.done));
  }

  /** The flight of (step, g), once it has started. */
  async #flight(step: number, g: number): Promise<Flight> {
    for (;;) {
      const f = this.#flights.get(key(step, g));
      if (f) return f;
      if (this.#closed) throw new Error("async rollouts closed");
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** Starts every group that pacing and the concurrency limit allow. */
  #pump(): void {
    while (
      !this.#closed &&
      this.#inFlight < this.#maxInFlight &&
      this.#next.step <= this.#lastStep &&
      this.#next.step <= lastUsableStep(this.#version, this.ctx.cfg.pipeline.max_steps_off_policy)
    ) {
      this.#start(this.#next.step, this.#next.g);
      this.#next = this.#next.g + 1 < this.#perStep
        ? { step: this.#next.step, g: this.#next.g + 1 }
        : { step: this.#next.step + 1, g: 0 };
    }
  }

  #start(step: number, g: number): void {
    this.#inFlight++;
    const version = this.#version;
    const start = performance.now() - this.ctx.t0;
    const options = {
      ...collectOptions(this.ctx, step, version),
      // One group's episodes at a time per flight.
      maxConcurrency: Math.min(episodeConcurrency(this.ctx.cfg), this.ctx.cfg.rollout.group_size),
    };
    const end = () => performance.now() - this.ctx.t0;
    let played;
    if (this.mix) {
      const specs = this.#mixSpecs.get(step) ?? this.mix.groupSpecs(step);
      this.#mixSpecs.set(step, specs);
      const spec = specs[g];
      played = this.mix.play([spec], this.#sampler, options)
        .then((play) => ({ res: play.res, play, spec, end: end() }));
    } else {
      const spec = groupSpec(this.ctx, step, g);
      played = collectGroups([spec], this.#sampler, options)
        .then((res) => ({ res, play: null, spec, end: end() }));
    }
    const done = played.finally(() => {
      this.#inFlight--;
      this.#pump();
    });
    done.catch(() => {}); // a failure surfaces in take(); never as an unhandled rejection
    this.#flights.set(key(step, g), { step, g, version, start, done });
    this.#waiters.splice(0).forEach((w) => w());
  }
}

function key(step: number, g: number): string {
  return `${step}/${g}`;
}
