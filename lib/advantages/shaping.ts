/**
 * Reward shaping: how an episode's turn rewards become the one reward its group is compared on,
 * and when a group has nothing to compare. The advantage pipeline (./pipeline.ts) and the
 * OpenReward environment mix (lib/sources/mix.ts) both shape with these functions, so GEM's,
 * the cookbook's and OpenReward's settings mean the same thing wherever they are set:
 *
 * | setting | meaning | who names it so |
 * | --- | --- | --- |
 * | `reduction` | sum, mean, max or min of the rewards | cookbook (sum), OpenReward's `reward_reduction` |
 * | `nonFinalTurnReward` | replaces the reward of every turn but the last | config `advantages.non_final_turn_reward` |
 * | `unfinishedReward` | one more reward when the episode did not complete | config `environments.*.unfinished_reward` (OpenReward's `nonterminal_reward`) |
 * | `minReward` / `maxReward` | clamps the episode's reward | OpenReward's `min_reward` / `max_reward` |
 *
 * Worked examples (rewards of a 3-turn episode `[0, 0.5, 1]`):
 * - sum → 1.5; mean → 0.5; max → 1.
 * - `nonFinalTurnReward: 0`, sum → 1 (only the outcome counts).
 * - an unfinished episode `[0.5]` with `unfinishedReward: -1`, sum → -0.5.
 * - sum with `maxReward: 1` → 1.
 *
 * @module
 */

import { z } from "zod";

/**
 * The largest reward, in absolute value, a reward setting may hold (a replacement, a bonus, a
 * clamp): environments reward in about [−1, 1], and a value far past this is a typo, or an
 * overflow waiting to turn an advantage into Infinity.
 */
export const REWARD_SETTING_LIMIT = 1000;

/** A reward-valued setting: a finite number within ±{@link REWARD_SETTING_LIMIT}. */
export function rewardSetting(): z.ZodNumber {
  return z.number().min(-REWARD_SETTING_LIMIT).max(REWARD_SETTING_LIMIT);
}

/** How turn rewards reduce to an episode reward. */
export const RewardReductionSchema: z.ZodEnum<
  { sum: "sum"; mean: "mean"; max: "max"; min: "min" }
> = z.enum(["sum", "mean", "max", "min"]);

/** Settings of {@link shapeEpisodeReward}; every field optional (no shaping but the sum). */
export interface RewardShaping {
  reduction?: z.infer<typeof RewardReductionSchema>;
  /** Replaces the reward of every non-final turn (null: keep them). */
  nonFinalTurnReward?: number | null;
  /** Added as one more reward when the episode did not complete (null: none). */
  unfinishedReward?: number | null;
  /** Clamps of the episode's reward (null: none). */
  minReward?: number | null;
  maxReward?: number | null;
}

/** The groups whose rewards spread less than this teach a group baseline nothing. */
export const CONSTANT_GROUP_SPREAD = 1e-8;

/**
 * The turn rewards with `nonFinalTurnReward` applied (what the discounted modes see). A turn
 * reward must be finite and an episode must have a turn.
 *
 * @example
 * shapeTurnRewards([0.2, 0.5, 1], { nonFinalTurnReward: 0 }); // [0, 0, 1]
 */
export function shapeTurnRewards(rewards: readonly number[], s: RewardShaping = {}): number[] {
  if (rewards.length === 0) throw new Error("an episode must have at least one turn reward");
  if (rewards.some((r) => !Number.isFinite(r))) throw new Error(`non-finite reward in ${rewards}`);
  const replace = s.nonFinalTurnReward ?? null;
  if (replace === null) return [...rewards];
  return rewards.map((r, t) => (t === rewards.length - 1 ? r : replace));
}

/**
 * The episode's reward from its rewards (one per turn, or several a turn when a tool gave them
 * apart), or null when there is no reward at all (an episode OpenReward counts as failed).
 *
 * @example
 * shapeEpisodeReward([0, 0.5, 1], { reduction: "mean" }); // 0.5
 * shapeEpisodeReward([0.5], { unfinishedReward: -1 }, { finished: false }); // -0.5
 */
export function shapeEpisodeReward(
  rewards: readonly number[],
  s: RewardShaping = {},
  { finished = true }: { finished?: boolean } = {},
): number | null {
  const rs = rewards.length ? shapeTurnRewards(rewards, s) : [];
  if (!finished && s.unfinishedReward !== undefined && s.unfinishedReward !== null) {
    rs.push(s.unfinishedReward);
  }
  if (rs.length === 0) return null;
  let r = reduceRewards(rs, s.reduction ?? "sum");
  if (s.minReward !== undefined && s.minReward !== null) r = Math.max(s.minReward, r);
  if (s.maxReward !== undefined && s.maxReward !== null) r = Math.min(s.maxReward, r);
  return r;
}

/** `sum`, `mean`, `max` or `min` of a non-empty list. */
export function reduceRewards(
  xs: readonly number[],
  how: z.infer<typeof RewardReductionSchema>,
): number {
  switch (how) {
    case "sum":
      return xs.reduce((a, b) => a + b, 0);
    case "mean":
      return xs.reduce((a, b) => a + b, 0) / xs.length;
    case "max":
      return Math.max(...xs);
    case "min":
      return Math.min(...xs);
  }
}

/**
 * Whether a group's episode rewards are all the same (within {@link CONSTANT_GROUP_SPREAD}), so a
 * group baseline leaves no signal. One episode is a constant group.
 *
 * @example
 * isConstantGroup([1, 1, 1]); // true
 * isConstantGroup([1, 0.5]); // false
 */
export function isConstantGroup(rewards: readonly number[]): boolean {
  if (rewards.length === 0) return true;
  return Math.max(...rewards) - Math.min(...rewards) < CONSTANT_GROUP_SPREAD;
}
