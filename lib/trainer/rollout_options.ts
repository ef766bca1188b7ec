/**
 * The rollout options a run plays with, shared by its training rollouts (the schedulers of
 * lib/sources/) and its held-out evaluation (./evaluate.ts), so both play episodes alike: token
 * limits, temperature, concurrency, failure policy, tool declarations.
 *
 * Env seeds and sampler seeds are functions of (seed, step, group) in every mode. On resume, what
 * was in flight at the checkpoint is regenerated: the same groups (same env and sampler seeds),
 * sampled with the resumed weights.
 *
 * @module
 */

import type { TrainConfig } from "../config/mod.ts";
import type { Renderer } from "../renderers/types.ts";
import type { CollectOptions } from "../rollout/mod.ts";
import { stepSeeds } from "../rollout/seeds.ts";
import { templateDeclaration } from "../rollout/tool_prompt.ts";

/** What a run's rollouts are played with. */
export interface RolloutContext {
  cfg: TrainConfig;
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
