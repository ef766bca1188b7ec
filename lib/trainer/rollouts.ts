/**
 * Where a training step's groups come from, in the trainer's three execution modes.
 *
 * - {@link SyncRollouts} (`sync`, `stream`): the step's groups are collected with the step's
 *   sampler once the previous step is done; `stream` gets each group as it finishes.
 * - {@link AsyncRollouts} (`async`): rollout workers keep playing groups with the newest sampler
 *   while the trainer trains. **Pacing**: a group is started only if the step that will train it
 *   is at most `max_steps_off_policy` optimizer steps ahead of the sampler's weights, so in a
 *   steady state no group goes stale and no paid rollout is thrown away. Groups are trained in
 *   their index order (step s trains groups `(s−1)·B … s·B−1`), which keeps that bound and makes
 *   the data cursor a function of the step. A stale group (only possible if pacing is bypassed)
 *   is replayed with the current sampler and counted.
 *
 * Env seeds and sampler seeds are functions of (seed, step, group) in every mode. On resume, what
 * was in flight at the checkpoint is regenerated: the same groups (same env and sampler seeds),
 * sampled with the resumed weights.
 *
 * @module
 */

import type { TrainConfig } from "../config/mod.ts";
import type { AnyEnv } from "../envs/types.ts";
import type { Renderer } from "../renderers/types.ts";
import { lastUsableStep, offPolicySteps } from "../rl/staleness.ts";
import type { EpisodeGroup } from "../rl/types.ts";
import {
  collectGroups,
  type CollectOptions,
  type CollectResult,
  type GroupSpec,
  type Sampler,
} from "../rollout/mod.ts";
import { deriveSeed } from "../util/random.ts";
import { templateDeclaration } from "../openreward/prompt.ts";
import { mean } from "../util/stats.ts";

/** A step's groups and what collecting them cost. */
export interface StepRollouts {
  /** Kept groups, in group order. */
  groups: EpisodeGroup[];
  /** `rollout_errors/*`, `sampling_client/*`, `async/*` metrics. */
  metrics: Record<string, number>;
  /** Wall spans of the groups' collection (ms since the run started), for the timeline. */
  spans: { name: string; start: number; end: number }[];
}

/** What both sources need. */
export interface RolloutContext {
  cfg: TrainConfig;
  makeEnv: () => AnyEnv;
  renderer: Renderer;
  /** `performance.now()` at the run's start: spans are measured from it. */
  t0: number;
}

/** The spec of group `g` of `step`: its id, env seed and seeding index. */
export function groupSpec(ctx: RolloutContext, step: number, g: number): GroupSpec {
  return {
    makeEnv: ctx.makeEnv,
    envSeed: deriveSeed(ctx.cfg.seed, step, g),
    id: `s${String(step).padStart(6, "0")}-g${String(g).padStart(3, "0")}`,
    seedIndex: g,
  };
}

/** Collection options of a step's groups sampled by sampler `version`. */
export function collectOptions(
  ctx: RolloutContext,
  step: number,
  version: number,
): CollectOptions {
  const r = ctx.cfg.rollout;
  return {
    groupSize: r.group_size,
    maxConcurrency: r.concurrency_limit ?? r.max_concurrency,
    maxTokensPerTurn: r.max_tokens_per_turn,
    maxTokensPerEpisode: r.max_tokens_per_episode ?? undefined,
    maxTotalTokens: r.max_total_tokens ?? undefined,
    timeoutMs: r.timeout_s === null ? undefined : r.timeout_s * 1000,
    temperature: r.temperature,
    seed: deriveSeed(ctx.cfg.seed, step, -1),
    failures: { onError: r.on_error, maxRetries: r.max_retries },
    renderer: ctx.renderer,
    samplerVersion: version,
    toolUse: {
      invalidCallReward: r.invalid_tool_call_reward,
      ...(r.system_prompt_template
        ? { declareTools: templateDeclaration(r.system_prompt_template) }
        : {}),
    },
  };
}

/** `rollout_errors/*` and sampler-version metrics of a step's collections. */
export function collectionMetrics(
  results: CollectResult[],
  groups: EpisodeGroup[],
  step: number,
): Record<string, number> {
  const sum = (f: (r: CollectResult) => number) => results.reduce((a, r) => a + f(r), 0);
  const versions = groups.flatMap((g) =>
    g.episodes.flatMap((e) => e.turns.map((t) => t.samplerVersion))
  );
  const offPolicy = versions.map((v) => offPolicySteps(v, step));
  return {
    "rollout_errors/error": sum((r) => r.dropped.episodeError),
    "rollout_errors/timeout": sum((r) => r.dropped.episodeTimeout),
    "rollout_errors/total": sum((r) => r.errors.length),
    "rollout_errors/retries": sum((r) => r.retries),
    "rollout_errors/groups_skipped": sum((r) =>
      r.dropped.groupResetError + r.dropped.groupEpisodeFailed + r.dropped.groupTooFewEpisodes
    ),
    ...(versions.length
      ? {
        "sampling_client/step_max": Math.max(...versions),
        "sampling_client/step_min": Math.min(...versions),
        "sampling_client/step_mean": mean(versions),
        "async/off_policy_max": Math.max(...offPolicy),
        "async/off_policy_mean": mean(offPolicy),
      }
      : {}),
  };
}

/** A source of each step's groups. */
export interface RolloutSource {
  /** The groups of `step`; `onGroup` sees each kept group as soon as it is ready. */
  take(step: number, onGroup?: (g: EpisodeGroup) => void): Promise<StepRollouts>;
  /** A new sampler (weights after `version` optimizer steps). */
  setSampler(sampler: Sampler, version: number): void;
  /** Waits for work in flight to end (its results are dropped). */
  close(): Promise<void>;
}

/** `sync` and `stream`: each step's groups, collected with that step's sampler. */
export class SyncRollouts implements RolloutSource {
  #sampler: Sampler;
  #version: number;

  constructor(readonly ctx: RolloutContext, sampler: Sampler, version: number) {
    this.#sampler = sampler;
    this.#version = version;
  }

  setSampler(sampler: Sampler, version: number): void {
    this.#sampler = sampler;
    this.#version = version;
  }

  async take(step: number, onGroup?: (g: EpisodeGroup) => void): Promise<StepRollouts> {
    const start = performance.now() - this.ctx.t0;
    const specs = Array.from(
      { length: this.ctx.cfg.rollout.groups_per_batch },
      (_, g) => groupSpec(this.ctx, step, g),
    );
    const res = await collectGroups(specs, this.#sampler, {
      ...collectOptions(this.ctx, step, this.#version),
      onGroup,
    });
    return {
      groups: res.groups,
      metrics: collectionMetrics([res], res.groups, step),
      spans: [{ name: "rollout", start, end: performance.now() - this.ctx.t0 }],
    };
  }

  async close(): Promise<void> {}
}

interface Flight {
  step: number;
  g: number;
  version: number;
  start: number;
  done: Promise<{ res: CollectResult; end: number }>;
}

/** `async`: groups played ahead with the newest sampler, paced by `max_steps_off_policy`. */
export class AsyncRollouts implements RolloutSource {
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

  constructor(
    readonly ctx: RolloutContext,
    sampler: Sampler,
    version: number,
    firstStep: number,
  ) {
    this.#sampler = sampler;
    this.#version = version;
    this.#perStep = ctx.cfg.rollout.groups_per_batch;
    // As many groups in flight as the episode concurrency allows, at least one.
    this.#maxInFlight = Math.max(
      1,
      Math.floor(ctx.cfg.rollout.max_concurrency / ctx.cfg.rollout.group_size),
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

  async take(step: number, onGroup?: (g: EpisodeGroup) => void): Promise<StepRollouts> {
    const results: CollectResult[] = [];
    const groups: EpisodeGroup[] = [];
    const spans: StepRollouts["spans"] = [];
    let requeued = 0;
    for (let g = 0; g < this.#perStep; g++) {
      for (;;) {
        const flight = await this.#flight(step, g);
        const { res, end } = await flight.done;
        this.#flights.delete(key(step, g));
        if (offPolicySteps(flight.version, step) > this.ctx.cfg.pipeline.max_steps_off_policy) {
          // Pacing should prevent this; if it did not, replay the group rather than train stale.
          requeued++;
          this.requeued++;
          this.#start(step, g);
          continue;
        }
        results.push(res);
        spans.push({ name: `rollout g${g}`, start: flight.start, end });
        for (const group of res.groups) {
          groups.push(group);
          onGroup?.(group);
        }
        break;
      }
    }
    return {
      groups,
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
    const done = collectGroups([groupSpec(this.ctx, step, g)], this.#sampler, {
      ...collectOptions(this.ctx, step, version),
      // One group's episodes at a time per flight.
      maxConcurrency: Math.min(
        this.ctx.cfg.rollout.max_concurrency,
        this.ctx.cfg.rollout.group_size,
      ),
    }).then((res) => ({ res, end: performance.now() - this.ctx.t0 })).finally(() => {
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
