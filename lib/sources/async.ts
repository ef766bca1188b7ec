/**
 * `async` execution: rollout workers keep playing groups with the newest sampler while the
 * trainer trains. **Pacing**: a group is started only if the step that will train it is at most
 * `max_steps_off_policy` optimizer steps ahead of the sampler's weights, so in a steady state no
 * group goes stale and no paid rollout is thrown away. Groups are trained in their index order
 * (step s trains groups `(s−1)·B … s·B−1`), which keeps that bound and makes the data cursor a
 * function of the step. A stale group (only possible if pacing is bypassed) is replayed with the
 * current sampler and counted. Each group is the plan's spec of that (step, index), played alone
 * and judged by the plan as in `sync` mode.
 *
 * @module
 */

import type { EpisodeGroup } from "../rl/types.ts";
import { lastUsableStep, offPolicySteps } from "../rl/staleness.ts";
import type { GroupSpec, Sampler } from "../rollout/mod.ts";
import {
  collectOptions,
  type GroupSource,
  type RolloutContext,
  type StepGroups,
} from "../trainer/mod.ts";
import type { Plan, PlayedGroups } from "./plan.ts";

interface Flight<P> {
  step: number;
  g: number;
  version: number;
  start: number;
  done: Promise<{ play: P; end: number }>;
}

/** `async`: groups played ahead with the newest sampler, paced by `max_steps_off_policy`. */
export class AsyncRollouts<S extends GroupSpec, P extends PlayedGroups> implements GroupSource {
  #sampler: Sampler;
  #version: number;
  readonly #perStep: number;
  readonly #maxInFlight: number;
  readonly #lastStep: number;
  /** The next group to start, as (step, group). */
  #next: { step: number; g: number };
  #inFlight = 0;
  readonly #flights = new Map<string, Flight<P>>();
  #waiters: (() => void)[] = [];
  #closed = false;
  /** Stops the groups in flight when the run is interrupted. */
  readonly #stop = new AbortController();
  /** Groups replayed because they went stale (pacing bypassed). */
  requeued = 0;
  /** The plan's specs of the steps in flight (a step's draws are made once). */
  readonly #specs = new Map<number, S[]>();

  /** Plays `plan`'s groups with `ctx`'s settings, sampling with `sampler`. */
  constructor(
    readonly plan: Plan<S, P>,
    readonly ctx: RolloutContext,
    sampler: Sampler,
    version: number,
    firstStep: number,
  ) {
    this.#sampler = sampler;
    this.#version = version;
    const { groupsPerBatch, collect } = ctx.rollouts;
    this.#perStep = groupsPerBatch;
    // As many groups in flight as the episode concurrency allows, at least one.
    this.#maxInFlight = Math.max(1, Math.floor(collect.maxConcurrency / collect.groupSize));
    this.#lastStep = plan.steps;
    this.#next = { step: firstStep, g: 0 };
    this.#pump();
  }

  setSampler(sampler: Sampler, version: number): void {
    this.#sampler = sampler;
    this.#version = version;
    this.#pump();
  }

  async take(
    step: number,
    onGroup?: (g: EpisodeGroup) => void,
    signal?: AbortSignal,
  ): Promise<StepGroups | null> {
    const plays: P[] = [];
    const spans: StepGroups["spans"] = [];
    let requeued = 0;
    for (let g = 0; g < this.#perStep; g++) {
      for (;;) {
        const flight = await this.#flight(step, g, signal);
        // Ctrl-C: the step is not trained; close() stops what is in flight.
        const done = flight && await untilAborted(flight.done, signal);
        if (!flight || !done) return null;
        const { play, end } = done;
        this.#flights.delete(key(step, g));
        if (offPolicySteps(flight.version, step) > this.ctx.rollouts.maxStepsOffPolicy) {
          // Pacing should prevent this; if it did not, replay the group rather than train stale.
          requeued++;
          this.requeued++;
          this.#start(step, g);
          continue;
        }
        spans.push({ name: `rollout g${g}`, start: flight.start, end });
        plays.push(play);
        for (const group of play.kept) onGroup?.(group);
        break;
      }
    }
    this.#specs.delete(step);
    const judged = this.plan.stepGroups(plays, step);
    return { ...judged, metrics: { ...judged.metrics, "async/requeued": requeued }, spans };
  }

  async close({ interrupted }: { interrupted: boolean }): Promise<void> {
    this.#closed = true;
    // An interrupted run does not wait for groups it will not train.
    if (interrupted) this.#stop.abort();
    this.#waiters.splice(0).forEach((w) => w());
    await Promise.allSettled([...this.#flights.values()].map((f) => f.done));
  }

  /** The flight of (step, g), once it has started; null when the signal aborts first. */
  async #flight(step: number, g: number, signal?: AbortSignal): Promise<Flight<P> | null> {
    for (;;) {
      const f = this.#flights.get(key(step, g));
      if (f) return f;
      if (this.#closed) throw new Error("async rollouts closed");
      const woken = new Promise<void>((resolve) => this.#waiters.push(resolve));
      if ((await untilAborted(woken, signal)) === null) return null;
    }
  }

  /** Starts every group that pacing and the concurrency limit allow. */
  #pump(): void {
    while (
      !this.#closed &&
      this.#inFlight < this.#maxInFlight &&
      this.#next.step <= this.#lastStep &&
      this.#next.step <= lastUsableStep(this.#version, this.ctx.rollouts.maxStepsOffPolicy)
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
    const { maxConcurrency, groupSize } = this.ctx.rollouts.collect;
    const options = {
      ...collectOptions(this.ctx, step, version),
      // One group's episodes at a time per flight.
      maxConcurrency: Math.min(maxConcurrency, groupSize),
      signal: this.#stop.signal,
    };
    const specs = this.#specs.get(step) ?? this.plan.groupSpecs(step);
    this.#specs.set(step, specs);
    const done = this.plan.play([specs[g]], this.#sampler, options)
      .then((play) => ({ play, end: performance.now() - this.ctx.t0 }))
      .finally(() => {
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

/** `p`'s value, or null as soon as `signal` aborts (p keeps running). */
async function untilAborted<T>(p: Promise<T>, signal?: AbortSignal): Promise<T | null> {
  if (!signal) return await p;
  if (signal.aborted) return null;
  let onAbort!: () => void;
  const aborted = new Promise<null>((resolve) => {
    onAbort = () => resolve(null);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([p, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
