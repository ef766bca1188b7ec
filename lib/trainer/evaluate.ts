/**
 * Held-out evaluation, the project's one evaluator: a policy plays one episode per held-out env
 * seed ({@link HELD_OUT_ENV_SEEDS} in `lib/util/random.ts`, which no training seed from
 * `deriveSeed` ever is) with fixed sampler seeds, so every policy evaluated on an environment
 * plays the same episodes. The trainer compares the base model and the trained policy
 * ({@link evaluateRun}, written as `eval.json` and printed as `heldOutLine`, both of
 * `lib/rundir`, and shown in the report); the run API scores each checkpoint, and the learning
 * benchmark each arm, with {@link evaluateHeldOut}.
 *
 * @module
 */

import type { AnyEnv } from "../envs/types.ts";
import type { ServiceClient } from "../tinker/mod.ts";
import { HELD_OUT_ENV_SEEDS, heldOutEnvSeeds } from "../util/random.ts";
import type { Renderer } from "../renderers/types.ts";
import {
  collectGroups,
  type CollectOptions,
  type GroupSpec,
  type Sampler,
} from "../rollout/mod.ts";
import { episodeSucceeded } from "./metrics.ts";
import { type TaskProvider, ToolTaskEnv } from "../envs/tool_task_env.ts";
import type { TaskSplit } from "../envs/tool_env.ts";
import type { HeldOutEvaluation, PolicyScore } from "../rundir/mod.ts";
import type { RolloutSettings } from "./rollout_options.ts";

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
  /** Token limit of each action. */
  maxTokensPerTurn: number;
  /** Sampling temperature. */
  temperature: number;
  /** The policy's chat format. */
  renderer: Renderer;
  /** Episodes in flight (default 32). */
  maxConcurrency?: number;
  /** Action tokens per episode (default: no limit). */
  maxTokensPerEpisode?: number;
  /** Tokens per episode's whole conversation (default: no limit). */
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

/** A run's held-out settings, resolved from its config by `prepareRun`. */
export interface HeldOutSettings {
  /** Episodes each policy plays (`eval.episodes`). */
  episodes: number;
  /** The environment's id, as `eval.json` records it. */
  envId: string;
  /** The base model, as `eval.json` records it. */
  model: string;
  /** The run's rollout options: held-out episodes play with its limits, temperature, tools. */
  collect: RolloutSettings["collect"];
}

/** What {@link evaluateRun} needs of a finished run. */
export interface RunEvaluationInput {
  /** The held-out settings (episodes, seeds, concurrency). */
  heldOut: HeldOutSettings;
  /** The session that samples the base model. */
  service: ServiceClient;
  /** The trained policy's sampler (weights after the last step). */
  trained: Sampler;
  /** Steps behind the trained policy. */
  step: number;
  /** Makes a held-out environment. */
  makeEnv: () => AnyEnv;
  /** The task list's split `makeEnv` plays ({@link heldOutEnvironment}), recorded. */
  split?: HeldOutEvaluation["split"];
  /** The environment's own sampling settings, over the run's (a mix entry's). */
  sampling?: GroupSpec["sampling"];
  /** The policy's chat format. */
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
  const { envId, model, episodes, collect: c } = i.heldOut;
  const t0 = performance.now();
  const options: HeldOutOptions = {
    episodes,
    maxTokensPerTurn: c.maxTokensPerTurn,
    maxTokensPerEpisode: c.maxTokensPerEpisode,
    maxTotalTokens: c.maxTotalTokens,
    toolUse: c.toolUse,
    temperature: c.temperature,
    maxConcurrency: c.maxConcurrency,
    sampling: i.sampling,
    renderer: i.renderer,
    signal: i.signal,
  };
  const total = 2 * options.episodes;
  const base = await i.service.createSamplingClient({ baseModel: model });
  const baseScore = await evaluateHeldOut(base, i.makeEnv, {
    ...options,
    onProgress: ({ done }) => i.onProgress?.({ done, total }),
  });
  const trainedScore = await evaluateHeldOut(i.trained, i.makeEnv, {
    ...options,
    onProgress: ({ done }) => i.onProgress?.({ done: options.episodes + done, total }),
  });
  return {
    env_id: envId,
    model,
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
