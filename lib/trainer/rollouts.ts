/**
 * Where a training step's groups come from, in the trainer's three execution modes.
 *
 * - `SyncRollouts` (`sync`, `stream`, ./sync_rollouts.ts): the step's groups are collected with the step's
 *   sampler once the previous step is done; `stream` gets each group as it finishes.
 * - `AsyncRollouts` (`async`, ./async_rollouts.ts): rollout workers keep playing groups with the newest sampler
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
import type { FailedEpisode } from "./source.ts";
import type { AnyEnv } from "../envs/types.ts";
import type { Renderer } from "../renderers/types.ts";
import { offPolicySteps } from "../rl/staleness.ts";
import type { EpisodeGroup } from "../rl/types.ts";
import type { CollectOptions, CollectResult, GroupSpec } from "../rollout/mod.ts";
import { stepSeeds } from "../rollout/seeds.ts";
import { templateDeclaration } from "../openreward/prompt.ts";
import { mean } from "../util/stats.ts";

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
    envSeed: stepSeeds(ctx.cfg.seed, step).envSeed(g),
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
    maxConcurrency: episodeConcurrency(ctx.cfg),
    maxTokensPerTurn: r.max_tokens_per_turn,
    maxTokensPerEpisode: r.max_tokens_per_episode ?? undefined,
    maxTotalTokens: r.max_total_tokens ?? undefined,
    timeoutMs: r.timeout_s === null ? undefined : r.timeout_s * 1000,
    temperature: r.temperature,
    seed: stepSeeds(ctx.cfg.seed, step).samplerSeed,
    failures: { onError: r.on_error, maxRetries: r.max_retries },
    renderer: ctx.renderer,
    samplerVersion: version,
    toolUse: toolUseOptions(ctx.cfg),
  };
}

/** How a run's episodes declare tools and score invalid calls (rollouts and held-out alike). */
export function toolUseOptions(cfg: TrainConfig): NonNullable<CollectOptions["toolUse"]> {
  const r = cfg.rollout;
  return {
    invalidCallReward: r.invalid_tool_call_reward,
    endOnInvalidCall: r.on_invalid_tool_call === "end",
    ...(r.system_prompt_template
      ? { declareTools: templateDeclaration(r.system_prompt_template) }
      : {}),
  };
}

/** Episodes in flight at once (`rollout.max_concurrency`). */
export function episodeConcurrency(cfg: TrainConfig): number {
  return cfg.rollout.max_concurrency;
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

/** The failed episodes of a collection, named by the specs they played. */
export function failedEpisodes(
  res: CollectResult,
  specs: GroupSpec[],
  envId = "",
): FailedEpisode[] {
  return res.failed.map((f) => {
    const spec = specs[f.groupIndex];
    return {
      groupId: spec.id ?? `g${f.groupIndex}`,
      envId: spec.tags?.[0] ?? envId,
      envSeed: spec.envSeed,
      tags: spec.tags ?? [],
      episode: f.episodeIndex ?? -1,
      error: f.message,
    };
  });
}
