/**
 * Advantages: from the rewards of groups of episodes to one advantage per turn, by one named
 * pipeline that covers the peer systems' choices:
 *
 * | mode | advantage of a turn | used by |
 * | --- | --- | --- |
 * | `raw` | the episode reward | OpenClaw (`compute_grpo_advantages` returns the reward as is) |
 * | `group_centered` | episode reward − group mean | tinker-cookbook (Dr. GRPO: no std division) |
 * | `group_zscore` | (reward − group mean) / (group std + eps) | GRPO as first published |
 * | `batch_zscore` | (reward − batch mean) / (batch std + eps) | OpenReward's `centered_normalized` over a batch |
 * | `discounted` | return G_t = r_t + γ·G_{t+1} of the turn | REINFORCE without a baseline |
 * | `discounted_rebn` | G_t z-scored over every turn of the batch | GEM's `tinker_train.py` (ReBN) |
 * | `group_discounted` | G_t − mean of G_t over the group's episodes that reach turn t | GRPO with a per-turn baseline (ours) |
 *
 * Before that: turn rewards reduce to an episode reward (`sum`, `mean`, `max`, `min`), an
 * optional `nonFinalTurnReward` replaces the rewards of non-final turns (./shaping.ts, shared
 * with the OpenReward mix), constant groups (./shaping.ts's rule: no learning signal for
 * group baselines) are kept, dropped, or dropped but one kept, and with `downsampleTo` each group
 * is cut to the episodes whose rewards vary most (./downsample.ts, PODS): the mode then sees only
 * those, and the others get no advantage. After: optional clamps of the advantages.
 *
 * @module
 */

import { z } from "zod";
import { mean, std } from "../util/stats.ts";
import { maxVarianceSubset } from "./downsample.ts";
import {
  isConstantGroup,
  reduceRewards,
  RewardReductionSchema,
  rewardSetting,
  type RewardShaping,
  shapeTurnRewards,
} from "./shaping.ts";

/** How advantages are computed (see the module table). */
export const AdvantageModeSchema: z.ZodEnum<
  {
    raw: "raw";
    group_centered: "group_centered";
    group_zscore: "group_zscore";
    batch_zscore: "batch_zscore";
    discounted: "discounted";
    discounted_rebn: "discounted_rebn";
    group_discounted: "group_discounted";
  }
> = z.enum([
  "raw",
  "group_centered",
  "group_zscore",
  "batch_zscore",
  "discounted",
  "discounted_rebn",
  "group_discounted",
]);

/** Settings of the advantage pipeline, with the cookbook's defaults. */
export const AdvantageConfigSchema: z.ZodObject<
  {
    mode: z.ZodDefault<typeof AdvantageModeSchema>;
    gamma: z.ZodDefault<z.ZodNumber>;
    constantGroups: z.ZodDefault<
      z.ZodEnum<{ keep: "keep"; drop: "drop"; drop_keep_one: "drop_keep_one" }>
    >;
    downsampleTo: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    rewardReduction: z.ZodDefault<typeof RewardReductionSchema>;
    nonFinalTurnReward: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    clampMin: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    clampMax: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    eps: z.ZodDefault<z.ZodNumber>;
  },
  z.core.$strip
> = z.object({
  mode: AdvantageModeSchema.default("group_centered"),
  /** Discount of the `discounted*` and `group_discounted` modes (GEM's default 0.9). */
  gamma: z.number().min(0).max(1).default(0.9),
  /** What to do with groups whose episodes all have the same reward. */
  constantGroups: z.enum(["keep", "drop", "drop_keep_one"]).default("keep"),
  /**
   * Train on this many episodes of each larger group, those whose rewards vary most
   * (./downsample.ts); null: every episode.
   */
  downsampleTo: z.number().int().min(2).max(4096).nullable().default(null),
  /** How a multi-turn episode's turn rewards become its reward (episode modes). */
  rewardReduction: RewardReductionSchema.default("sum"),
  /** Replaces the reward of every non-final turn (e.g. 0: only the outcome counts). */
  nonFinalTurnReward: rewardSetting().nullable().default(null),
  /** Clamp the final advantages into [clampMin, clampMax]. */
  clampMin: rewardSetting().nullable().default(null),
  clampMax: rewardSetting().nullable().default(null),
  /** Added to the std of z-scores (GEM uses 1e-9). */
  eps: z.number().positive().max(1).default(1e-9),
}).refine((c) => c.clampMin === null || c.clampMax === null || c.clampMin <= c.clampMax, {
  message: "clampMin must not exceed clampMax",
});

/** Settings of the advantage pipeline. */
export type AdvantageConfig = z.infer<typeof AdvantageConfigSchema>;

/** The rewards of one episode, turn by turn (a single-turn episode has one). */
export interface EpisodeRewards {
  /** The reward of each turn, in order. */
  turnRewards: number[];
  /**
   * The episode's reward when its environment shaped it already (`Episode.shapedReward`, a
   * mix's per-environment rules): used instead of reducing `turnRewards` by the episode modes;
   * the discounted modes (`group_discounted` too) still use the turn rewards.
   */
  shapedReward?: number;
}

/** Summary of a batch's advantages and group outcomes, for logging. */
export interface AdvantageStats {
  /** Mean advantage over the kept episodes. */
  mean: number;
  /** Their standard deviation. */
  std: number;
  /** The smallest advantage. */
  min: number;
  /** The largest advantage. */
  max: number;
  /** Share of groups whose episodes' rewards differ (the groups that teach something). */
  fracMixed: number;
  /** Share of constant groups with reward > 0 (all solved). */
  fracAllGood: number;
  /** Share of constant groups with reward ≤ 0 (all failed). */
  fracAllBad: number;
  /** Groups removed by the constant-group policy. */
  droppedGroups: number;
  /** Episodes of kept groups left out by down-sampling (`downsampleTo`). */
  downsampledEpisodes: number;
}

/** Advantages per kept group, episode and turn, with the stats. */
export interface AdvantageResult {
  /**
   * `advantages[group][episode][turn]`, over the kept groups (in `keptGroups` order); 0 on
   * every turn of a down-sampled episode.
   */
  advantages: number[][][];
  /** Index (in the input) of each kept group. */
  keptGroups: number[];
  /** `downsampled[group][episode]`: left out by down-sampling (kept groups, in their order). */
  downsampled: boolean[][];
  /** The batch's summary. */
  stats: AdvantageStats;
}

/**
 * Runs the pipeline on groups of episodes (a group: episodes from the same start state).
 *
 * @example
 * const { advantages } = computeAdvantages([[{ turnRewards: [1] }, { turnRewards: [0] }]]);
 * // group_centered: [[[0.5], [-0.5]]]
 */
export function computeAdvantages(
  groups: EpisodeRewards[][],
  config: Partial<AdvantageConfig> = {},
): AdvantageResult {
  const cfg = AdvantageConfigSchema.parse(config);
  const shaping: RewardShaping = { nonFinalTurnReward: cfg.nonFinalTurnReward };
  const turnRewards = groups.map((g) => g.map((e) => shapeTurnRewards(e.turnRewards, shaping)));
  const episodeRewards = turnRewards.map((g, i) =>
    g.map((turns, e) => groups[i][e].shapedReward ?? reduceRewards(turns, cfg.rewardReduction))
  );

  const constant = episodeRewards.map(isConstantGroup);
  let kept = groups.map((_, i) => i);
  if (cfg.constantGroups !== "keep") {
    kept = kept.filter((i) => !constant[i]);
    if (kept.length === 0 && cfg.constantGroups === "drop_keep_one" && groups.length > 0) {
      kept = [0];
    }
  }

  // Down-sampling: the modes below see each kept group's selected episodes only.
  const selected = kept.map((i) =>
    cfg.downsampleTo === null
      ? episodeRewards[i].map((_, e) => e)
      : maxVarianceSubset(episodeRewards[i], cfg.downsampleTo)
  );
  const rewardsOf = kept.map((i, k) => selected[k].map((e) => episodeRewards[i][e]));
  const turnsOf = kept.map((i, k) => selected[k].map((e) => turnRewards[i][e]));

  let advantages: number[][][];
  switch (cfg.mode) {
    case "raw":
      advantages = kept.map((_, k) => broadcast(rewardsOf[k], turnsOf[k]));
      break;
    case "group_centered":
    case "group_zscore":
      advantages = kept.map((_, k) => {
        const rs = rewardsOf[k];
        const { mean, std } = moments(rs);
        const scale = cfg.mode === "group_zscore" ? 1 / (std + cfg.eps) : 1;
        return broadcast(rs.map((r) => (r - mean) * scale), turnsOf[k]);
      });
      break;
    case "batch_zscore": {
      const { mean, std } = moments(kept.flatMap((_, k) => rewardsOf[k]));
      advantages = kept.map((_, k) =>
        broadcast(rewardsOf[k].map((r) => (r - mean) / (std + cfg.eps)), turnsOf[k])
      );
      break;
    }
    case "discounted":
    case "discounted_rebn": {
      const returns = kept.map((_, k) =>
        turnsOf[k].map((turns) => discountedReturns(turns, cfg.gamma))
      );
      if (cfg.mode === "discounted") advantages = returns;
      else {
        const { mean, std } = moments(returns.flat(2));
        advantages = returns.map((g) => g.map((e) => e.map((x) => (x - mean) / (std + cfg.eps))));
      }
      break;
    }
    case "group_discounted":
      // Why a baseline per turn index rather than one per group: once most episodes succeed,
      // a group's episodes differ mostly in how fast they solve, and the discount turns that
      // into signal; comparing turn t only with the other episodes' turn t keeps a long
      // episode's late, nearly-solved turns from being judged against early ones.
      advantages = kept.map((_, k) => {
        const returns = turnsOf[k].map((turns) => discountedReturns(turns, cfg.gamma));
        const longest = Math.max(...returns.map((r) => r.length));
        const baseline = Array.from(
          { length: longest },
          (_, t) => mean(returns.filter((r) => r.length > t).map((r) => r[t])),
        );
        return returns.map((r) => r.map((g, t) => g - baseline[t]));
      });
      break;
  }

  advantages = advantages.map((g) =>
    g.map((e) => e.map((a) => clamp(a, cfg.clampMin, cfg.clampMax)))
  );
  // Back to every episode of each kept group: a down-sampled one gets 0 on each turn.
  const downsampled = kept.map((i, k) => {
    const chosen = new Set(selected[k]);
    return episodeRewards[i].map((_, e) => !chosen.has(e));
  });
  const summary = stats(advantages, episodeRewards, constant, groups.length - kept.length, {
    downsampled: downsampled.flat().filter(Boolean).length,
  });
  const full = kept.map((i, k) => {
    const at = new Map(selected[k].map((e, j) => [e, j]));
    return turnRewards[i].map((turns, e) => {
      const j = at.get(e);
      return j === undefined ? turns.map(() => 0) : advantages[k][j];
    });
  });
  return { advantages: full, keptGroups: kept, downsampled, stats: summary };
}

/** Monte Carlo returns `G_t = r_t + γ·G_{t+1}`. */
export function discountedReturns(rewards: number[], gamma: number): number[] {
  const out = new Array<number>(rewards.length);
  let g = 0;
  for (let t = rewards.length - 1; t >= 0; t--) out[t] = g = rewards[t] + gamma * g;
  return out;
}

/** An episode's scalar advantage on each of its turns. */
function broadcast(perEpisode: number[], turns: number[][]): number[][] {
  return perEpisode.map((a, e) => turns[e].map(() => a));
}

/** Mean and population std (as numpy's default, which the peer systems use). */
function moments(xs: number[]): { mean: number; std: number } {
  return { mean: mean(xs), std: std(xs) };
}

function clamp(x: number, lo: number | null, hi: number | null): number {
  return Math.min(hi ?? Infinity, Math.max(lo ?? -Infinity, x));
}

function stats(
  advantages: number[][][],
  episodeRewards: number[][],
  constant: boolean[],
  dropped: number,
  { downsampled }: { downsampled: number },
): AdvantageStats {
  const all = advantages.flat(2);
  const { mean, std } = moments(all);
  const n = episodeRewards.length || 1;
  const good = episodeRewards.filter((rs, i) => constant[i] && rs[0] > 0).length;
  const bad = episodeRewards.filter((rs, i) => constant[i] && !(rs[0] > 0)).length;
  return {
    mean,
    std,
    min: all.length ? Math.min(...all) : 0,
    max: all.length ? Math.max(...all) : 0,
    fracMixed: (episodeRewards.length - good - bad) / n,
    fracAllGood: good / n,
    fracAllBad: bad / n,
    droppedGroups: dropped,
    downsampledEpisodes: downsampled,
  };
}
