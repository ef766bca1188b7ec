/**
 * Composition: from turns and their evidence to per-token advantages, per method. Pure: no
 * network, no mutation of its inputs, unit-testable with numbers checked by hand. Environment
 * episodes, proxy sessions and OpenReward rollouts all go through {@link composeAdvantages}.
 *
 * - `rl`: turn rewards (the environment's or the client's; with `rewardSource: "success"` only
 *   success and penalties, {@link successReward}; or PRM scores with `rewardSource: "prm"`) through the advantage pipeline over groups. With PRM rewards, OpenClaw's
 *   at-least-one rule masks turns scored 0, except the first scored turn of an episode that has
 *   no kept turn yet.
 * - `opd`: per token `w_opd · (teacher_lp − student_lp)`; turns without an accepted hint (or
 *   whose teacher call failed) are not trained.
 * - `combine`: `w_opd · (teacher_lp − student_lp) + w_rl · A_rl` with OpenClaw's dispatch (hint
 *   and RL signal: both terms; hint only: OPD; RL only: RL; neither: not trained).
 * - KL penalty (`klCoef > 0`): `−klCoef · (student_lp − reference_lp)` added per token to every
 *   trained turn; a turn whose reference call failed is not trained.
 *
 * @module
 */

import { type AdvantageConfig, type AdvantageStats, computeAdvantages } from "../advantages/mod.ts";
import type {
  Dispatch,
  EpisodeGroup,
  Method,
  ScoredGroup,
  ScoredTurn,
  TurnEvidence,
} from "../rl/types.ts";
import { isSolved } from "../rl/types.ts";
import { mean } from "../util/stats.ts";
import type { EvidenceByTurn, EvidencePlan } from "./evidence.ts";
import { AtLeastOneRule, combineDispatch, opdAdvantages } from "./rules.ts";
import { teacherGap } from "./teacher_check.ts";

/** A method and its settings: all that composition (and the evidence plan) depends on. */
export interface MethodSettings {
  /** The method: `rl`, `opd` or `combine`. */
  method: Method;
  /**
   * Where the RL term's turn rewards come from: the turn's own reward, its success part
   * ({@link successReward}), or PRM scores.
   */
  rewardSource: "env" | "success" | "prm";
  /** Where OPD's hint comes from: the hint judge, or the turn's next state itself. */
  hintSource: "judge" | "next_state";
  /** Also gather PRM votes for monitoring when they do not set rewards. */
  evalMode: boolean;
  /** The advantage settings of the RL term. */
  advantages: Partial<AdvantageConfig>;
  /** Weight of the OPD term in `combine`. */
  wOpd: number;
  /** Weight of the RL term in `combine`. */
  wRl: number;
  /** Per-token KL penalty coefficient against the reference policy (0: off). */
  klCoef: number;
}

/** The config's `scoring` section as {@link methodSettingsOf} reads it (its snake_case names). */
export interface ScoringSection {
  /** `scoring.method`. */
  method: Method;
  /** `scoring.rl_reward`. */
  rl_reward: MethodSettings["rewardSource"];
  /** `scoring.opd_hint`. */
  opd_hint: "judge" | "next_observation";
  /** `scoring.eval_mode`. */
  eval_mode: boolean;
  /** `scoring.w_opd`. */
  w_opd: number;
  /** `scoring.w_rl`. */
  w_rl: number;
  /** `scoring.kl_loss_coef`. */
  kl_loss_coef: number;
}

/**
 * A run's method settings from its config's `scoring` section and its advantage settings: the
 * trainer and the viewer's what-if read a config through this one mapping.
 */
export function methodSettingsOf(
  scoring: ScoringSection,
  advantages: Partial<AdvantageConfig>,
): MethodSettings {
  return {
    method: scoring.method,
    rewardSource: scoring.rl_reward,
    hintSource: scoring.opd_hint === "judge" ? "judge" : "next_state",
    evalMode: scoring.eval_mode,
    advantages,
    wOpd: scoring.w_opd,
    wRl: scoring.w_rl,
    klCoef: scoring.kl_loss_coef,
  };
}

/** What a batch's composition yields. */
export interface ComposedBatch {
  /** Every group, with its turns scored; groups the advantage pipeline dropped have `kept: false`. */
  groups: ScoredGroup[];
  /** The advantage pipeline's statistics (null when no group was scored for RL). */
  advantageStats: AdvantageStats | null;
  /** `score/*` metrics. */
  metrics: Record<string, number>;
}

/**
 * A turn's reward with partial credit dropped: 1 when it solves the task (reward ≥ 1, the
 * trainer's success rule), a penalty (reward < 0, e.g. a format error) kept, anything between
 * 0. GEM's GuessTheNumber gives a failed episode's last guess up to 0.9 for closeness, so
 * solving and nearly solving differ by a tenth of a point; on success alone the advantage of
 * solving is the whole signal.
 *
 * @example
 * [1, 0.89, 0, -0.1].map(successReward) // [1, 0, 0, -0.1]
 */
export function successReward(reward: number): number {
  return isSolved(reward) ? 1 : Math.min(reward, 0);
}

/**
 * The evidence a method needs.
 *
 * @example
 * evidencePlan({ method: "combine", hintSource: "judge", rewardSource: "env", ... })
 * // { prm: false, hint: "judge", teacher: true, reference: false }
 */
export function evidencePlan(s: MethodSettings): EvidencePlan {
  const opd = s.method !== "rl";
  return {
    prm: s.rewardSource === "prm" || s.evalMode,
    hint: opd ? s.hintSource : null,
    teacher: opd,
    reference: s.klCoef > 0,
  };
}

const NO_EVIDENCE: TurnEvidence = { errors: [] };

/**
 * Per-token advantages of every turn for a method, from the turns' evidence.
 *
 * @example
 * const { groups } = composeAdvantages(episodeGroups, evidence, settings);
 * const datums = scoredGroupsToDatums(groups);
 */
export function composeAdvantages(
  groups: EpisodeGroup[],
  evidence: EvidenceByTurn,
  s: MethodSettings,
): ComposedBatch {
  const ev = (t: EpisodeGroup["episodes"][number]["turns"][number]) =>
    evidence.get(t) ?? NO_EVIDENCE;
  const reward = (t: EpisodeGroup["episodes"][number]["turns"][number]) =>
    s.rewardSource === "prm"
      ? ev(t).prm?.score ?? 0
      : s.rewardSource === "success"
      ? successReward(t.reward)
      : t.reward;

  // The RL term: the advantage pipeline over every group (it may drop constant groups).
  let kept = new Set(groups.map((_, g) => g));
  const downsampled: boolean[][] = [];
  let rl: number[][][] | null = null;
  let advantageStats: AdvantageStats | null = null;
  if (s.method !== "opd") {
    const res = computeAdvantages(
      groups.map((g) =>
        g.episodes.map((e) => ({
          turnRewards: e.turns.map(reward),
          shapedReward: s.rewardSource === "env" ? e.shapedReward : undefined,
        }))
      ),
      s.advantages,
    );
    kept = new Set(res.keptGroups);
    advantageStats = res.stats;
    rl = groups.map(() => []);
    res.keptGroups.forEach((g, k) => {
      rl![g] = res.advantages[k];
      downsampled[g] = res.downsampled[k];
    });
  }

  const scored: ScoredGroup[] = groups.map((group, g) => {
    const atLeastOne = new AtLeastOneRule();
    return {
      group,
      kept: kept.has(g),
      episodes: group.episodes.map((episode, e) => ({
        episode,
        ...(downsampled[g]?.[e] ? { downsampled: true } : {}),
        turns: episode.turns.map((turn, t): ScoredTurn => {
          const evid = ev(turn);
          const rlAdvantage = rl?.[g]?.[e]?.[t] ?? 0;
          const base = { turn, evidence: evid };
          const score = { rlReward: reward(turn), rlAdvantage, dispatch: null as Dispatch };
          // A down-sampled episode is left out whole, OPD's term included.
          if (!kept.has(g) || downsampled[g]?.[e]) {
            return { ...base, score: { ...score, trained: false }, advantages: null };
          }
          const n = turn.actionTokens.length;
          const opd = evid.teacherLogprobs && evid.hint
            ? opdAdvantages(evid.teacherLogprobs, turn.logprobs)
            : undefined;
          let adv: number[] | null = null;
          if (s.method === "rl") {
            const masked = s.rewardSource === "prm" &&
              !(evid.atLeastOne ?? atLeastOne.decide(`${e}`, atLeastOneInput(turn, evid)));
            // A zero advantage teaches nothing (e.g. a constant group): skip its compute,
            // unless a KL term still has something to say.
            if (!masked && (rlAdvantage !== 0 || s.klCoef > 0)) {
              adv = new Array(n).fill(rlAdvantage);
            }
            score.dispatch = !masked && rlAdvantage !== 0 ? "rl" : null;
          } else if (s.method === "opd") {
            score.dispatch = opd ? "opd" : null;
            if (opd) adv = opd.map((a) => s.wOpd * a);
          } else {
            score.dispatch = combineDispatch(opd !== undefined, rlAdvantage === 0 ? 0 : 1);
            if (score.dispatch) {
              adv = Array.from(
                { length: n },
                (_, k) => s.wOpd * (opd?.[k] ?? 0) + s.wRl * rlAdvantage,
              );
            }
          }
          if (adv && s.klCoef > 0) {
            const ref = evid.referenceLogprobs;
            adv = ref ? adv.map((a, k) => a - s.klCoef * (turn.logprobs[k] - ref[k])) : null;
          }
          return {
            ...base,
            score: { ...score, ...(opd ? { opdMean: mean(opd) } : {}), trained: adv !== null },
            advantages: adv,
          };
        }),
      })),
    };
  });
  return { groups: scored, advantageStats, metrics: scoreMetrics(scored, s) };
}

/** What OpenClaw's at-least-one rule reads of a turn. */
export function atLeastOneInput(
  turn: EpisodeGroup["episodes"][number]["turns"][number],
  evidence: TurnEvidence,
): { hasNextState: boolean; score: number | null } {
  return { hasNextState: turn.nextState.length > 0, score: evidence.prm?.score ?? null };
}

/** `score/*` metrics of a composed batch. */
function scoreMetrics(groups: ScoredGroup[], s: MethodSettings): Record<string, number> {
  const all = groups.flatMap((g) => g.episodes.flatMap((e) => e.turns));
  const m: Record<string, number> = {
    "score/trained_turns": all.filter((t) => t.score.trained).length,
    "score/errors": all.filter((t) => t.evidence.errors.length > 0).length,
    "score/w_opd": s.wOpd,
    "score/w_rl": s.wRl,
  };
  const prm = all.map((t) => t.evidence.prm).filter((p) => p !== undefined);
  if (prm.length) {
    m["score/prm_eval_score"] = mean(prm.map((p) => p.score));
    m["score/prm_invalid_vote_frac"] = mean(
      prm.flatMap((p) => p.votes.map((v) => v === null ? 1 : 0)),
    );
  }
  if (s.method !== "rl") {
    const asked = all.filter((t) => t.evidence.hint !== undefined);
    m["score/hint_accepted_frac"] = asked.length
      ? asked.filter((t) => t.evidence.hint).length / asked.length
      : 0;
    const withOpd = all.filter((t) => t.score.opdMean !== undefined);
    if (withOpd.length) m["score/opd_advantage_mean"] = mean(withOpd.map((t) => t.score.opdMean!));
    // What the worse-teacher rule reads (./teacher_check.ts), recorded with every step.
    const gap = teacherGap(groups);
    if (gap) {
      m["score/opd_tokens"] = gap.tokens;
      m["score/opd_negative_frac"] = gap.negativeFrac;
    }
    for (const d of ["opd+rl", "opd", "rl"] as const) {
      m[`score/${d}_samples`] = all.filter((t) => t.score.dispatch === d).length;
    }
  }
  return m;
}
