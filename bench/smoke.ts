/**
 * `deno task bench <suite> --smoke`: each suite in one small round, so that CI runs every bench
 * (tests/bench/smoke_test.ts, smoke_training_test.ts) and a bench that breaks fails there instead of rotting unseen.
 * The figures of a smoke run mean nothing: they are written to a temporary directory, never to
 * bench/results/. Sizes here are the only place a smoke run differs from a real one.
 *
 * @module
 */

import { BENCH } from "./local_engine.ts";
import { CODEC_BENCH } from "./client.ts";
import { ROLLOUT_BENCH } from "./rollout.ts";
import { PIPELINE_BENCH } from "./pipeline.ts";
import { ORS_BENCH } from "./openreward.ts";
import { PROXY_BENCH } from "./proxy.ts";
import { HTTP_BENCH } from "./http.ts";
import { VIEWER_BENCH } from "./viewer.ts";
import { LONG_PROMPT_BENCH } from "./long_prompt.ts";
import { LEARNER_LONG_BENCH } from "./learner_long.ts";
import { RL_STEP_PROBE, RL_STEP_SETTINGS } from "./rl_step.ts";
import { SOAK_FLAGS } from "./soak.ts";
import { UNSEEN_TOOLS_BENCH } from "./unseen_tools.ts";
import type { LEARNING_BENCH } from "./learning.ts";

/** Rounds of local_engine's side-by-side comparison in a smoke run. */
export const SMOKE_ROUNDS = 1;
/** Steps of the soak in a smoke run (its least). */
export const SMOKE_SOAK_STEPS = 4;
/** The learning bench in a smoke run: a couple of steps per arm, tiny evaluations. */
export const SMOKE_LEARNING: Partial<typeof LEARNING_BENCH> = {
  maxSteps: 2,
  goalWindow: 1,
  validationEpisodes: 4,
  episodesPerStep: 4,
  evalEpisodes: 4,
  wallBudgetMinutes: 2,
};
/** Extra `deno task train` arguments of the examples in a smoke run: one step of one group, a small eval. */
export const SMOKE_EXAMPLE_ARGS = ["--max-steps", "1", "--batch-size", "1", "--eval.episodes", "2"];

/** Shrinks every suite's sizes to a smoke run's (see the module's doc). */
export function applySmokeSizes(): void {
  const set = <T extends object>(target: T, sizes: Partial<T>) => Object.assign(target, sizes);
  // The real sizes are `as const` for their readers; a smoke run overwrites them in place.
  set(BENCH as unknown as Record<string, unknown>, {
    batch: 2,
    seq: 16,
    steps: 1,
    warmup: 1,
    sampleRows: 2,
    prompt: 4,
    newTokens: 4,
    sampleReps: 1,
  });
  set(CODEC_BENCH, { datums: 8, tokens: 64, reps: 1, rounds: 1 });
  set(ROLLOUT_BENCH as unknown as Record<string, unknown>, {
    groups: 1,
    groupSize: 2,
    groupSizeAt1: 1,
    maxTokensPerTurn: 8,
    concurrency: [1, 2],
    arms: [{ engine: "jax", prefixCacheMb: 0 }, { engine: "onnx", prefixCacheMb: 0 }],
    rounds: 1,
    warmupGroups: 1,
  });
  set(PIPELINE_BENCH, { steps: 2, groupsPerBatch: 1, groupSize: 2, maxTokens: 4, rounds: 1 });
  set(ORS_BENCH, {
    envs: ORS_BENCH.envs.slice(0, 1),
    groups: 1,
    groupSize: 2,
    concurrency: [2],
    rounds: 1,
  });
  set(PROXY_BENCH, { sessions: 4, turns: 1, rounds: 1, aloneSessions: 1 });
  // One trained step is a real run all the same; the replica only needs to be larger.
  set(VIEWER_BENCH, { steps: 1, replicatedSteps: 10, rounds: 1 });
  set(HTTP_BENCH, { requests: 20, warmup: 5, rounds: 1, concurrency: [1, 4] });
  set(LEARNER_LONG_BENCH, { tokens: [2_000], replyTokens: 20, loraRank: 4 });
  set(LONG_PROMPT_BENCH, { promptTokens: 2_000, newTokens: 4, loraRank: 4, shorterTokens: 1_000 });
  set(SOAK_FLAGS as unknown as Record<string, string>, {
    "batch-size": "2",
    "train-epochs": "1",
    "eval.episodes": "2",
  });
  set(UNSEEN_TOOLS_BENCH, { tasks: 2, maxTokens: 16, recallLists: 2 });
  RL_STEP_SETTINGS.splice(1);
  set(RL_STEP_PROBE, {
    transcripts: 2,
    playEpisodes: 2,
    stepEpisodes: 4,
    maxTokensPerTurn: 32,
    maxTotalTokens: 128,
  });
}
