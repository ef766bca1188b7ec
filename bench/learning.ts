/**
 * The learning benchmark: from the local base model, GuessTheNumber-easy success rate per step
 * over a fixed budget, for tinkerbench's default algorithm and for the GEM seed's (REINFORCE on
 * γ-discounted returns with ReBN, `importance_sampling`), in one run on one machine. Each arm
 * stops at its step budget or once its success rate (mean of the last 3 steps) reaches the
 * goal; a held-out evaluation of the final policy closes each arm.
 *
 * Run: `deno task bench learning` (writes bench/results/learning.json).
 *
 * @module
 */

import { join } from "node:path";
import { loadTrainConfig, type TrainConfig } from "../lib/config/mod.ts";
import { connectTinker } from "../lib/local/connect.ts";
import { make } from "../lib/envs/mod.ts";
import { collectGroups } from "../lib/rollout/mod.ts";
import { ChatMLRenderer } from "../lib/renderers/chatml.ts";
import { episodeSucceeded } from "../lib/trainer/metrics.ts";
import { type StepMetrics, trainRL } from "../lib/trainer/rl.ts";
import type { ServiceClient } from "../lib/tinker/mod.ts";

/** Settings shared by both arms; each arm overrides the algorithm. */
export const LEARNING_BENCH = {
  envId: "game:GuessTheNumber-v0-easy",
  model: "local/games",
  maxSteps: 80,
  goal: 0.95,
  /** Episodes per step, the same for both arms. */
  episodesPerStep: 32,
  evalEpisodes: 256,
  /** Per arm. */
  wallBudgetMinutes: 25,
};

/** The two algorithms, as config flags and overrides; both see `episodesPerStep` episodes. */
export const ARMS: Record<string, { flags: Record<string, unknown>; overrides: string[] }> = {
  tinkerbench: {
    flags: {
      batch_size: LEARNING_BENCH.episodesPerStep / 8,
      group_size: 8,
      loss_fn: "importance_sampling",
    },
    overrides: ["advantages.mode=group_centered"],
  },
  gem: {
    // GEM's tinker_train.py: no groups, returns z-scored over the batch's transitions.
    flags: {
      batch_size: LEARNING_BENCH.episodesPerStep,
      group_size: 1,
      loss_fn: "importance_sampling",
      gamma: 0.9,
      use_rebn: true,
    },
    overrides: ["advantages.mode=discounted_rebn"],
  },
};

/** Success rate of a policy on held-out seeds (temperature 1, as in training). */
async function evaluate(
  service: ServiceClient,
  from: { baseModel: string } | { modelPath: string },
  cfg: TrainConfig,
  episodes: number,
): Promise<number> {
  const sampler = await service.createSamplingClient(from);
  const res = await collectGroups(
    Array.from({ length: episodes / 8 }, (_, g) => ({
      makeEnv: () => make(cfg.env_id),
      envSeed: 1_000_000 + g,
    })),
    sampler,
    {
      groupSize: 8,
      maxTokensPerTurn: cfg.max_tokens,
      temperature: 1,
      seed: 5_000_000,
      renderer: new ChatMLRenderer(),
    },
  );
  const groups = res.groups.map((g) => g.episodes);
  const eps = groups.flat();
  return eps.filter(episodeSucceeded).length / eps.length;
}

/** Runs both arms one after the other and returns the result record. */
export async function runLearningBench(
  log: (msg: string) => void,
  opts: Partial<typeof LEARNING_BENCH> = {},
): Promise<Record<string, unknown>> {
  const b = { ...LEARNING_BENCH, ...opts };
  const home = await Deno.makeTempDir({ prefix: "tb-learning-" });
  const tinker = await connectTinker({ dataDir: join(home, "backend") });
  const arms: Record<string, unknown> = {};
  let baseSuccess: number | null = null;
  try {
    for (const [name, arm] of Object.entries(ARMS)) {
      const config = await loadTrainConfig({
        flags: {
          model_name: b.model,
          env_id: b.envId,
          max_steps: b.maxSteps,
          learning_rate: 3e-3,
          lora_rank: 16,
          max_tokens: 16,
          save_interval: 0,
          seed: 0,
          ...arm.flags,
        },
        overrides: arm.overrides,
      });
      const abort = new AbortController();
      const t0 = performance.now();
      const curve: Array<
        { step: number; success: number; reward: number; parseError: number; seconds: number }
      > = [];
      let reachedAt: { step: number; seconds: number } | null = null;
      const run = await trainRL({
        config,
        service: tinker.service,
        logDir: join(home, name),
        signal: abort.signal,
        onStep: (m: StepMetrics) => {
          const seconds = (performance.now() - t0) / 1000;
          curve.push({
            step: m.step,
            success: m["env/all/success"],
            reward: m["env/all/reward/total"],
            parseError: m["env/all/stop/parse_error"],
            seconds,
          });
          const last3 = curve.slice(-3).map((c) => c.success);
          const avg = last3.reduce((a, x) => a + x, 0) / last3.length;
          log(
            `${name} step ${m.step}: success ${m["env/all/success"].toFixed(3)} (${
              seconds.toFixed(0)
            } s)`,
          );
          if (!reachedAt && last3.length === 3 && avg >= b.goal) {
            reachedAt = { step: m.step, seconds };
            abort.abort();
          }
          if (seconds > b.wallBudgetMinutes * 60) abort.abort();
        },
      });
      // The final policy's weights: the run's last checkpoint, saved for sampling.
      const training = await tinker.service.createTrainingClientFromState(
        run.checkpoint!.state_path,
      );
      const samplerPath = await training.saveWeightsForSampler(`${name}-eval`);
      const evalSuccess = await evaluate(
        tinker.service,
        { modelPath: samplerPath },
        config,
        b.evalEpisodes,
      );
      if (baseSuccess === null) {
        baseSuccess = await evaluate(
          tinker.service,
          { baseModel: b.model },
          config,
          b.evalEpisodes,
        );
        log(`base model: held-out success ${baseSuccess.toFixed(3)}`);
      }
      log(`${name}: held-out success ${evalSuccess.toFixed(3)}`);
      arms[name] = {
        config: { ...arm.flags, overrides: arm.overrides },
        steps: run.steps,
        seconds: (performance.now() - t0) / 1000,
        reached_goal: reachedAt,
        eval_success: evalSuccess,
        curve,
      };
    }
  } finally {
    await tinker.close();
  }
  return { ...b, base_eval_success: baseSuccess, arms };
}
