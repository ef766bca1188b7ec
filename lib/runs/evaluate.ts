/**
 * Held-out evaluation of a run's checkpoints (`eval_percent_correct`): the policy plays one
 * episode on each of a fixed block of environment seeds far from the ones training draws, at
 * the run's temperature and with fixed sampling seeds, so every checkpoint of every run on an
 * environment is scored on the same episodes. The trainer has no evaluation of its own; this
 * one reads only the run's checkpoints.
 *
 * @module
 */

import { make } from "../envs/registry.ts";
import { getRenderer } from "../renderers/mod.ts";
import { collectGroups } from "../rollout/mod.ts";
import { episodeSucceeded } from "../trainer/metrics.ts";
import { mean } from "../util/stats.ts";
import { type PolicySource, withPolicy } from "./policy.ts";

/**
 * First held-out environment seed. Training seeds are hashes spread over [0, 2³¹), so a run of
 * S steps × B groups meets one of these 2³¹ − 2·10⁹ ≈ 1.5·10⁸ seeds with chance ≈ S·B/14.
 * Seeds below 2³¹ keep every environment's seeded generator in its tested range.
 */
export const HELD_OUT_SEED = 2_000_000_000;

/** What an evaluation needs to know about the run. */
export interface EvalOptions {
  dataDir: string;
  environment: string;
  modelName: string;
  policy: PolicySource;
  episodes: number;
  maxTokens: number;
  temperature: number;
}

/** The score of one checkpoint. */
export interface EvalResult {
  episodes: number;
  /** Fraction of episodes solved (0–1). */
  percentCorrect: number;
  rewardMean: number;
}

/** Plays `episodes` held-out episodes with the policy and scores them. */
export async function evaluatePolicy(o: EvalOptions): Promise<EvalResult> {
  const renderer = getRenderer(o.modelName);
  return await withPolicy(o.dataDir, o.policy, async (sampler) => {
    const res = await collectGroups(
      Array.from({ length: o.episodes }, (_, i) => ({
        makeEnv: () => make(o.environment),
        envSeed: HELD_OUT_SEED + i,
      })),
      sampler,
      {
        groupSize: 1,
        maxTokensPerTurn: o.maxTokens,
        temperature: o.temperature,
        seed: HELD_OUT_SEED,
        renderer,
        failures: { onError: "drop_episode" },
      },
    );
    const episodes = res.groups.flatMap((g) => g.episodes);
    if (episodes.length === 0) {
      throw new Error(`no held-out episode finished (${res.errors[0]?.message ?? "no error"})`);
    }
    return {
      episodes: episodes.length,
      percentCorrect: episodes.filter(episodeSucceeded).length / episodes.length,
      rewardMean: mean(episodes.map((e) => e.totalReward)),
    };
  });
}
