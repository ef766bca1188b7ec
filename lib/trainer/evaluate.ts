/**
 * Held-out evaluation, the project's one evaluator: a policy plays one episode per held-out env
 * seed ({@link HELD_OUT_ENV_SEEDS} in `lib/util/random.ts`, which no training seed from
 * `deriveSeed` ever is) with fixed sampler seeds, so every policy evaluated on an environment
 * plays the same episodes. The trainer compares the base model and the trained policy
 * ({@link evaluateRun}, written as `eval.json`, printed as {@link heldOutLine}, shown in the
 * report); the run API scores each checkpoint, and the learning benchmark each arm, with
 * {@link evaluateHeldOut}.
 *
 * @module
 */

import { join } from "node:path";
import { z } from "zod";
import type { TrainConfig } from "../config/mod.ts";
import type { AnyEnv } from "../envs/types.ts";
import type { ServiceClient } from "../tinker/mod.ts";
import { HELD_OUT_ENV_SEEDS, heldOutEnvSeeds } from "../util/random.ts";
import { formatZodError } from "../util/zod.ts";
import type { Renderer } from "../renderers/types.ts";
import {
  collectGroups,
  type CollectOptions,
  type GroupSpec,
  type Sampler,
} from "../rollout/mod.ts";
import { episodeSucceeded } from "./metrics.ts";
import { episodeConcurrency, toolUseOptions } from "./rollout_options.ts";
import { type TaskProvider, ToolTaskEnv } from "../envs/tool_task_env.ts";
import type { TaskSplit } from "../envs/tool_env.ts";

/** Base sampler seed of held-out episodes. */
export const HELD_OUT_SAMPLER_SEED = 5_000_000;

/** Settings of {@link evaluateHeldOut}. */
export interface HeldOutOptions {
  /** Episodes, one per held-out env seed (`HELD_OUT_ENV_SEEDS.first + firstEpisode + i`). */
  episodes: number;
  /**
   * Index of the first held-out env seed (default 0). Episodes from another index are other
   * episodes: their sampler seeds start elsewhere too, so a target that recurs (ten in
   * GuessTheNumber-easy) is not played the same way twice.
   */
  firstEpisode?: number;
  maxTokensPerTurn: number;
  temperature: number;
  renderer: Renderer;
  /** Episodes in flight (default 32). */
  maxConcurrency?: number;
  maxTokensPerEpisode?: number;
  maxTotalTokens?: number;
  /** The environment's own sampling settings (a mix entry's `temperature`, `top_p`, `top_k`). */
  sampling?: GroupSpec["sampling"];
  /** How tools are declared and invalid calls scored: as in the run's rollouts. */
  toolUse?: CollectOptions["toolUse"];
  /** Called as episodes finish. */
  onProgress?: (p: { done: number; total: number }) => void;
  /** Stops the evaluation (Ctrl-C); its score is then partial, and the caller drops it. */
  signal?: AbortSignal;
}

/** One policy's score on the held-out episodes. */
export const PolicyScoreSchema = z.object({
  /** Solved episodes (rewards sum to ≥ 1) over episodes played. */
  success: z.number().min(0).max(1),
  mean_reward: z.number(),
  /** Episodes that played to the end (failed ones, e.g. context overflows, are left out). */
  episodes: z.number().int().min(0),
  /** Why the first left-out episode failed, when one did. */
  first_error: z.string().optional(),
});

/** A policy's score on the held-out episodes. */
export type PolicyScore = z.infer<typeof PolicyScoreSchema>;

/** The run directory's `eval.json`. */
export const HeldOutEvaluationSchema = z.object({
  env_id: z.string(),
  model: z.string(),
  /** Held-out episodes asked for (one per env seed). */
  episodes: z.number().int().min(1),
  /** The env seeds, first and last. */
  env_seeds: z.tuple([z.number().int(), z.number().int()]),
  sampler_seed: z.number().int(),
  temperature: z.number(),
  /** Steps of training behind the trained policy. */
  step: z.number().int().min(0),
  base: PolicyScoreSchema,
  trained: PolicyScoreSchema,
  /**
   * A task list's split the episodes played: one the run does not train on, else (`trained_on`)
   * the only split it has.
   */
  split: z.object({ name: z.string(), trained_on: z.boolean() }).optional(),
  /**
   * An environment mix's scores per environment (`base` and `trained` above are over all of
   * them), and the environments left out with the reason.
   */
  environments: z.record(
    z.string(),
    z.union([
      z.object({
        base: PolicyScoreSchema,
        trained: PolicyScoreSchema,
        /** A task list's: the split played, one the run did not train on. */
        split: z.string().optional(),
      }),
      z.object({ skipped: z.string() }),
    ]),
  ).optional(),
  seconds: z.number(),
});

/** A held-out comparison of the base model and the trained policy. */
export type HeldOutEvaluation = z.infer<typeof HeldOutEvaluationSchema>;

/**
 * Plays one episode per held-out env seed with `sampler` and scores them.
 *
 * @example
 * const score = await evaluateHeldOut(sampler, () => make("game:GuessTheNumber-v0-easy"), {
 *   episodes: 64, maxTokensPerTurn: 40, temperature: 1, renderer: getRenderer("local/games"),
 * });
 */
export async function evaluateHeldOut(
  sampler: Sampler,
  makeEnv: () => AnyEnv,
  o: HeldOutOptions,
): Promise<PolicyScore> {
  const res = await collectGroups(
    heldOutEnvSeeds(o.episodes, o.firstEpisode).map((envSeed) => ({
      makeEnv,
      envSeed,
      sampling: o.sampling,
    })),
    sampler,
    {
      groupSize: 1,
      maxConcurrency: o.maxConcurrency,
      maxTokensPerTurn: o.maxTokensPerTurn,
      maxTokensPerEpisode: o.maxTokensPerEpisode,
      maxTotalTokens: o.maxTotalTokens,
      toolUse: o.toolUse,
      temperature: o.temperature,
      seed: HELD_OUT_SAMPLER_SEED + (o.firstEpisode ?? 0),
      renderer: o.renderer,
      failures: { onError: "drop_episode" },
      onProgress: o.onProgress,
      signal: o.signal,
    },
  );
  const episodes = res.groups.flatMap((g) => g.episodes);
  const n = episodes.length;
  return {
    success: n ? episodes.filter(episodeSucceeded).length / n : 0,
    mean_reward: n ? episodes.reduce((a, e) => a + e.totalReward, 0) / n : 0,
    episodes: n,
    ...(res.errors.length ? { first_error: res.errors[0].message } : {}),
  };
}

/**
 * The one-line summary `deno task train` ends with.
 *
 * @example
 * heldOutLine(evaluation); // "held-out success: base 0.41 → trained 0.78 (64 episodes)"
 */
export function heldOutLine(e: HeldOutEvaluation): string {
  const line = (base: PolicyScore, trained: PolicyScore) =>
    `base ${base.success.toFixed(2)} → trained ${trained.success.toFixed(2)}`;
  const split = !e.split
    ? ""
    : e.split.trained_on
    ? `, ${e.split.name} split: its only one, trained on`
    : `, ${e.split.name} split`;
  const overall = `held-out success: ${line(e.base, e.trained)} (${e.episodes} episodes${
    e.environments ? " per environment" : ""
  }${split})`;
  if (!e.environments) return overall;
  const parts = Object.entries(e.environments).map(([name, x]) =>
    "skipped" in x
      ? `${name}: skipped (${x.skipped})`
      : `${name}${x.split ? ` (${x.split} split)` : ""}: ${line(x.base, x.trained)}`
  );
  // Every environment skipped: no number to print over all.
  if (e.base.episodes === 0) return `held-out success: none; ${parts.join("; ")}`;
  return `${overall}; ${parts.join("; ")}`;
}

/** Path of the evaluation file in a run directory. */
export function evaluationPath(logDir: string): string {
  return join(logDir, "eval.json");
}

/** Writes `eval.json` into the run directory. */
export async function writeEvaluation(logDir: string, e: HeldOutEvaluation): Promise<void> {
  await Deno.writeTextFile(evaluationPath(logDir), JSON.stringify(e, null, 2) + "\n");
}

/** The run directory's `eval.json`, or null when the run has none (or an unreadable one). */
export async function readEvaluation(logDir: string): Promise<HeldOutEvaluation | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(evaluationPath(logDir));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new Error(`${evaluationPath(logDir)}: not JSON (${(e as Error).message})`);
  }
  const parsed = HeldOutEvaluationSchema.safeParse(json);
  if (!parsed.success) {
    throw new Error(`${evaluationPath(logDir)}: ${formatZodError(parsed.error)}`);
  }
  return parsed.data;
}

/** What {@link evaluateRun} needs of a finished run. */
export interface RunEvaluationInput {
  config: TrainConfig;
  service: ServiceClient;
  /** The trained policy's sampler (weights after the last step). */
  trained: Sampler;
  /** Steps behind the trained policy. */
  step: number;
  makeEnv: () => AnyEnv;
  /** The task list's split `makeEnv` plays ({@link heldOutEnvironment}), recorded. */
  split?: HeldOutEvaluation["split"];
  /** The environment's own sampling settings, over the run's (a mix entry's). */
  sampling?: GroupSpec["sampling"];
  renderer: Renderer;
  /** Called as held-out episodes finish, the base model's first (done counts both). */
  onProgress?: (p: { done: number; total: number }) => void;
  /** Stops the evaluation (Ctrl-C). */
  signal?: AbortSignal;
}

/**
 * Plays the held-out episodes (`eval.episodes` of them) with the base model and with the
 * trained policy, at the rollouts' temperature and token limits.
 */
export async function evaluateRun(i: RunEvaluationInput): Promise<HeldOutEvaluation> {
  const cfg = i.config;
  const t0 = performance.now();
  const options: HeldOutOptions = {
    episodes: cfg.eval.episodes,
    maxTokensPerTurn: cfg.rollout.max_tokens_per_turn,
    maxTokensPerEpisode: cfg.rollout.max_tokens_per_episode ?? undefined,
    maxTotalTokens: cfg.rollout.max_total_tokens ?? undefined,
    toolUse: toolUseOptions(cfg),
    sampling: i.sampling,
    temperature: cfg.rollout.temperature,
    maxConcurrency: episodeConcurrency(cfg),
    renderer: i.renderer,
    signal: i.signal,
  };
  const total = 2 * options.episodes;
  const base = await i.service.createSamplingClient({ baseModel: cfg.policy.model });
  const baseScore = await evaluateHeldOut(base, i.makeEnv, {
    ...options,
    onProgress: ({ done }) => i.onProgress?.({ done, total }),
  });
  const trainedScore = await evaluateHeldOut(i.trained, i.makeEnv, {
    ...options,
    onProgress: ({ done }) => i.onProgress?.({ done: options.episodes + done, total }),
  });
  return {
    env_id: cfg.eval.env_id ?? cfg.rollout.env_id,
    model: cfg.policy.model,
    episodes: options.episodes,
    env_seeds: [HELD_OUT_ENV_SEEDS.first, HELD_OUT_ENV_SEEDS.first + options.episodes - 1],
    sampler_seed: HELD_OUT_SAMPLER_SEED,
    temperature: options.temperature,
    step: i.step,
    base: baseScore,
    trained: trainedScore,
    ...(i.split ? { split: i.split } : {}),
    seconds: (performance.now() - t0) / 1000,
  };
}

/**
 * The environment held-out episodes play, from a run's environment factory: a task list
 * (`ToolTaskEnv`) plays a split it does not train on, chosen as a mix entry's is
 * ({@link heldOutSplit}: `test`, then `validation`, then any), or its training split, said so,
 * when it has no other; an environment drawn from seeds plays held-out seeds as it is. Without
 * this, held-out seeds would index the training split's first tasks.
 *
 * @example
 * const { makeEnv, split } = await heldOutEnvironment(() => make("tool:WordProblems-v0"));
 * // split: { name: "test", trained_on: false }
 */
export async function heldOutEnvironment(
  makeEnv: () => AnyEnv,
): Promise<{ makeEnv: () => AnyEnv; split?: HeldOutEvaluation["split"] }> {
  const env = makeEnv();
  if (!(env instanceof ToolTaskEnv)) return { makeEnv };
  const held = await heldOutSplit(env.provider, [env.split]);
  if (!("split" in held)) return { makeEnv, split: { name: env.split, trained_on: true } };
  const { provider, id, maxTurns } = env;
  return {
    makeEnv: () => new ToolTaskEnv(provider, { id, split: held.split, maxTurns }),
    split: { name: held.split, trained_on: false },
  };
}

/** Where a task list's held-out episodes come from, or why it has none. */
export type HeldOutSplit = { split: string; from: "seeds" | "tasks" } | { skipped: string };

/** A held-out split's preference: a test split first, then a validation one, then any. */
const HELD_OUT_ORDER: Record<TaskSplit["type"], number> = { test: 0, validation: 1, train: 2 };

/**
 * The split a task-list environment is evaluated on: one it does not train on, a test split
 * first; or why there is none.
 *
 * @example
 * await heldOutSplit(localTasks(wordProblems()), ["train"]); // { split: "test", from: "tasks" }
 */
export async function heldOutSplit(
  provider: TaskProvider,
  trained: readonly string[],
): Promise<HeldOutSplit> {
  const free = (await provider.splits()).filter((s) => !trained.includes(s.name))
    .sort((a, b) => HELD_OUT_ORDER[a.type] - HELD_OUT_ORDER[b.type]);
  return free.length
    ? { split: free[0].name, from: "tasks" }
    : { skipped: `trains on every split it has (${trained.join(", ")}): no held-out tasks` };
}
