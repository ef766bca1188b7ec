/**
 * An episode's reward as OpenReward's trainer computes it: the rewards its tool calls gave (calls
 * that gave none are left out), plus `nonterminal_reward` when the episode did not finish,
 * reduced (`sum`, `mean`, `max`, `min`) and clamped. An episode with no reward at all has none
 * (null), and counts as a failed rollout.
 *
 * @module
 */

import type { Episode } from "../rl/types.ts";

/** The per-environment reward settings (OpenReward's keys). */
export interface RewardSettings {
  reward_reduction: "sum" | "mean" | "max" | "min";
  nonterminal_reward: number | null;
  min_reward: number | null;
  max_reward: number | null;
}

/**
 * The episode's reward, or null when nothing gave one.
 *
 * @example
 * episodeReward(ep, { reward_reduction: "sum", nonterminal_reward: 0, min_reward: null,
 *   max_reward: null }); // sum of the tool rewards, or 0 when it did not finish
 */
export function episodeReward(e: Episode, s: RewardSettings): number | null {
  const rewards = e.turns.flatMap((t) => t.rewards ?? [t.reward]);
  if (s.nonterminal_reward !== null && e.stopReason !== "completed") {
    rewards.push(s.nonterminal_reward);
  }
  if (rewards.length === 0) return null;
  let r: number;
  switch (s.reward_reduction) {
    case "sum":
      r = rewards.reduce((a, b) => a + b, 0);
      break;
    case "mean":
      r = rewards.reduce((a, b) => a + b, 0) / rewards.length;
      break;
    case "max":
      r = Math.max(...rewards);
      break;
    case "min":
      r = Math.min(...rewards);
      break;
  }
  if (s.min_reward !== null) r = Math.max(s.min_reward, r);
  if (s.max_reward !== null) r = Math.min(s.max_reward, r);
  return r;
}

/** The sample standard deviation (Python's `statistics.stdev`; 0 below two values). */
export function sampleStd(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1));
}
