/**
 * Down-sampling a group before training on it: sample more episodes than you train on, and train
 * on the subset whose rewards vary most (PODS's max-variance down-sampling: Xu et al., "Not All
 * Rollouts are Useful: Down-Sampling Rollouts in LLM Reinforcement Learning", 2025).
 *
 * Why: on a small model sampling is cheap and the learner's forward and backward are not (the
 * embedded backend samples 32 GuessTheNumber episodes in 0.3 s and trains on them in 2.4 s), and
 * once a policy mostly succeeds a group of 8 holds one or two failures, so most of the training
 * compute goes to successes whose advantage is small. Sampling 16 and training on the 8 whose
 * rewards spread most keeps every failure next to as many successes, for the same training cost.
 *
 * The rule: the subset of `m` rewards with the largest variance is always some `k` highest rewards
 * together with the `m − k` lowest (the paper's lemma), so trying each `k` finds it. Ties go to the
 * earlier episode, so the choice is deterministic.
 *
 * Worked examples:
 * - rewards `[1, 1, 0, 1, 1, 1]`, m 4 → episodes `[0, 1, 2, 3]`: the one failure and three
 *   successes (no subset holds two failures).
 * - rewards `[1, 0, 1, 0, 1, 0, 1, 1]`, m 4 → `[0, 1, 2, 3]`: two of each.
 * - rewards `[0.2, 0.9, 0.5, 0.1]`, m 2 → `[1, 3]`: the highest and the lowest.
 * - `m` ≥ the group's size → every episode.
 *
 * @module
 */

import { std } from "../util/stats.ts";

/**
 * Indices (ascending) of the `m` rewards whose population variance is largest.
 *
 * @example
 * maxVarianceSubset([1, 1, 0, 1, 1, 1], 4); // [0, 1, 2, 3]
 * maxVarianceSubset([0.2, 0.9, 0.5, 0.1], 2); // [1, 3]
 */
export function maxVarianceSubset(rewards: readonly number[], m: number): number[] {
  if (!Number.isInteger(m) || m < 1) throw new Error(`down-sample size must be ≥ 1, got ${m}`);
  const n = rewards.length;
  if (m >= n) return rewards.map((_, i) => i);
  // Highest first; equal rewards in episode order, so the earlier one is taken first.
  const byReward = rewards.map((_, i) => i).sort((a, b) => rewards[b] - rewards[a] || a - b);
  // The lowest are taken from the end of the same order, so among equal rewards the later ones
  // would be taken; re-sort that tail by index so ties still go to the earlier episode.
  let best: number[] = [];
  let bestSpread = -1;
  for (let high = 0; high <= m; high++) {
    const low = m - high;
    const tail = byReward.slice(high).sort((a, b) => rewards[a] - rewards[b] || a - b);
    const pick = [...byReward.slice(0, high), ...tail.slice(0, low)];
    const spread = std(pick.map((i) => rewards[i]));
    if (spread > bestSpread + 1e-12) {
      bestSpread = spread;
      best = pick;
    }
  }
  return best.sort((a, b) => a - b);
}
