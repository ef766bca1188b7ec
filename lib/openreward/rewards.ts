/**
 * An episode's reward as OpenReward's trainer computes it: the rewards its tool calls gave (calls
 * that gave none are left out), plus `unfinished_reward` (OpenReward's `nonterminal_reward`) when the episode did not finish,
 * reduced (`sum`, `mean`, `max`, `min`) and clamped: an environment entry's keys mapped onto the one
 * reward-shaping module (lib/advantages/shaping.ts). An episode with no reward at all has none
 * (null), and counts as a failed rollout.
 *
 * @module
 */

import { type RewardShaping, shapeEpisodeReward } from "../advantages/shaping.ts";
import type { Episode } from "../rl/types.ts";

/** The per-environment reward settings (an `environments.<name>` entry's keys). */
export interface RewardSettings {
  /** How an episode's turn rewards become one. */
  reward_reduction: "sum" | "mean" | "max" | "min";
  /** An unfinished episode's reward (null: as reduced). */
  unfinished_reward: number | null;
  /** Lower clamp of the episode's reward (null: none). */
  min_reward: number | null;
  /** Upper clamp of the episode's reward (null: none). */
  max_reward: number | null;
}

/** An entry's keys as the shaping module's settings. */
export function rewardShaping(s: RewardSettings): RewardShaping {
  return {
    reduction: s.reward_reduction,
    unfinishedReward: s.unfinished_reward,
    minReward: s.min_reward,
    maxReward: s.max_reward,
  };
}

/**
 * The episode's reward, or null when nothing gave one.
 *
 * @example
 * episodeReward(ep, { reward_reduction: "sum", unfinished_reward: 0, min_reward: null,
 *   max_reward: null }); // sum of the tool rewards, or 0 when it did not finish
 */
export function episodeReward(e: Episode, s: RewardSettings): number | null {
  return shapeEpisodeReward(e.turns.flatMap((t) => t.rewardParts ?? [t.reward]), rewardShaping(s), {
    finished: e.stopReason === "completed",
  });
}
