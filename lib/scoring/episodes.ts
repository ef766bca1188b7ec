/**
 * Scoring a batch of episode groups for one training method, into per-turn advantages ready
 * for the datum builder, with a record of every judgement.
 *
 * - `rl`: turn rewards from the environment (or PRM votes on each turn's next state when
 *   `rewardSource` is `prm`), then the advantage pipeline over the groups.
 * - `opd`: per token, `teacher_lp − student_lp`, where the teacher sees a hindsight hint in the
 *   last user message. The hint comes from the hint judge, or (`hintSource: next_observation`)
 *   is the turn's next state itself: in a game, the feedback that followed the move. Turns
 *   without an accepted hint are not trained.
 * - `combine`: `w_opd·(teacher_lp − student_lp) + w_rl·A_rl` per token, with OpenClaw's
 *   dispatch: turns with no hint train on the RL term only, turns with neither are not trained.
 *
 * A per-token KL penalty against the base model, `−kl_coef·(student_lp − base_lp)`, is added
 * when `klCoef > 0` (the reference policy is the teacher sampler, the base model by default).
 *
 * @module
 */

import { type AdvantageConfig, type AdvantageStats, computeAdvantages } from "../advantages/mod.ts";
import type { TurnTokens } from "../datums/mod.ts";
import type { Renderer } from "../renderers/types.ts";
import type { Episode } from "../rollout/mod.ts";
import { ModelInput, type SamplingClient } from "../tinker/mod.ts";
import {
  type ChatSampler,
  extractHint,
  type JudgeSampling,
  judgeTurn,
  teacherLogprobs,
} from "./judges.ts";
import { type ChatMessage, combineDispatch, opdAdvantages, type Vote } from "./rules.ts";

/** The training methods of OpenClaw, on environment episodes. */
export type Method = "rl" | "opd" | "combine";

/** What scoring needs besides the episodes. */
export interface ScoringOptions {
  method: Method;
  /** Where turn rewards come from for the RL term: the env's own reward, or PRM votes. */
  rewardSource: "env" | "prm";
  /** Where OPD's hindsight hint comes from. */
  hintSource: "judge" | "next_observation";
  /** Run the PRM judge for monitoring even when it does not set rewards (`--eval-mode`). */
  evalMode: boolean;
  advantages: Partial<AdvantageConfig>;
  wOpd: number;
  wRl: number;
  /** Per-token KL penalty coefficient against the teacher/base sampler (0: off). */
  klCoef: number;
  /** The PRM and hint judge (needed for `prm` rewards, `judge` hints, or eval mode). */
  judge?: ChatSampler;
  judgeSampling: JudgeSampling;
  /** The teacher (OPD) and KL reference: a sampler of the teacher model and its renderer. */
  teacher?: { sampler: SamplingClient; renderer: Renderer };
}

/** Everything decided about one turn, persisted with the rollouts. */
export interface TurnScore {
  group: number;
  episode: number;
  turn: number;
  envReward: number;
  /** The reward the RL term used (the env's or the PRM score). */
  reward: number;
  /** The RL advantage of the turn (0 when not used). */
  rlAdvantage: number;
  prm?: { score: Vote; votes: (Vote | null)[]; representative: string | null };
  hint?: string | null;
  hintDecisions?: (1 | -1 | null)[];
  /** Mean teacher − student log-prob over the response (OPD turns). */
  opdMean?: number;
  dispatch: "opd+rl" | "opd" | "rl" | null;
  trained: boolean;
  error?: string;
}

/** Scored episodes: the datum builder's input per episode, the records and the stats. */
export interface ScoredBatch {
  /** One trajectory per kept episode. */
  trajectories: TurnTokens[][];
  /** `[group, episode]` of each trajectory. */
  origins: [number, number][];
  turns: TurnScore[];
  advantageStats: AdvantageStats | null;
  metrics: Record<string, number>;
}

/**
 * Scores groups of episodes for a method.
 *
 * @example
 * const scored = await scoreEpisodes(groups, { method: "rl", rewardSource: "env", ... });
 * const datums = scored.trajectories.flatMap(trajectoryToDatums);
 */
export async function scoreEpisodes(groups: Episode[][], o: ScoringOptions): Promise<ScoredBatch> {
  const needsJudge = o.rewardSource === "prm" || o.evalMode ||
    (o.method !== "rl" && o.hintSource === "judge");
  if (needsJudge && !o.judge) throw new Error("scoring: this configuration needs a judge");
  if ((o.method !== "rl" || o.klCoef > 0) && !o.teacher) {
    throw new Error(`scoring: ${o.method !== "rl" ? o.method : "the KL penalty"} needs a teacher`);
  }

  const scores: TurnScore[][][] = groups.map((g, gi) =>
    g.map((ep, ei) =>
      ep.turns.map((t, ti) => ({
        group: gi,
        episode: ei,
        turn: ti,
        envReward: t.reward,
        reward: t.reward,
        rlAdvantage: 0,
        dispatch: null,
        trained: false,
      }))
    )
  );
  const all = scores.flat(2);
  const turnOf = (s: TurnScore) => groups[s.group][s.episode].turns[s.turn];
  const judged = (s: TurnScore) => {
    const t = turnOf(s);
    return { response: t.actionText, nextState: t.nextObservation, nextStateRole: "user" as const };
  };

  // PRM votes: as rewards, or for monitoring.
  if (o.rewardSource === "prm" || o.evalMode) {
    await Promise.all(all.map(async (s, i) => {
      try {
        const j = await judgeTurn(o.judge!, judged(s), seeded(o.judgeSampling, 2 * i));
        s.prm = { score: j.score, votes: j.votes, representative: j.representative };
        if (o.rewardSource === "prm") s.reward = j.score;
      } catch (e) {
        // A turn the judge could not score counts as 0, as OpenClaw treats unscored turns.
        s.error = (e as Error).message;
        if (o.rewardSource === "prm") s.reward = 0;
      }
    }));
    failIfAlwaysFails(all, `the PRM judge (${o.judge!.name})`);
  }

  // The RL term: advantages over groups (constant-group policy may drop some).
  let kept = groups.map((_, i) => i);
  let advantageStats: AdvantageStats | null = null;
  if (o.method !== "opd") {
    const res = computeAdvantages(
      scores.map((g) => g.map((ep) => ({ turnRewards: ep.map((s) => s.reward) }))),
      o.advantages,
    );
    kept = res.keptGroups;
    advantageStats = res.stats;
    res.keptGroups.forEach((gi, k) =>
      scores[gi].forEach((ep, ei) =>
        ep.forEach((s, ti) => s.rlAdvantage = res.advantages[k][ei][ti])
      )
    );
  }
  const keptTurns = kept.flatMap((gi) => scores[gi].flat());

  // The OPD term: a hint, then the teacher's log-probs of the student's tokens.
  const opd = new Map<TurnScore, number[]>();
  if (o.method !== "rl") {
    await Promise.all(keptTurns.map(async (s, i) => {
      const t = turnOf(s);
      try {
        if (o.hintSource === "judge") {
          const h = await extractHint(o.judge!, judged(s), seeded(o.judgeSampling, 2 * i + 1));
          s.hint = h.hint;
          s.hintDecisions = h.decisions;
        } else {
          s.hint = t.nextObservation.trim().length > 10 ? t.nextObservation.trim() : null;
        }
        if (s.hint === null) return;
        const teacherLps = await teacherLogprobs(
          o.teacher!.sampler,
          o.teacher!.renderer,
          messagesBefore(groups[s.group][s.episode], s.turn),
          s.hint,
          t.actionTokens,
        );
        const adv = opdAdvantages(teacherLps, t.logprobs);
        opd.set(s, adv);
        s.opdMean = mean(adv);
      } catch (e) {
        s.error = (e as Error).message;
      }
    }));
    failIfAlwaysFails(
      keptTurns,
      o.hintSource === "judge"
        ? `the hint judge (${o.judge!.name}) or the teacher (${o.teacher!.sampler.baseModel})`
        : `the teacher (${o.teacher!.sampler.baseModel})`,
    );
  }

  // KL penalty against the reference (teacher/base) policy on the turn's own prompt.
  const kl = new Map<TurnScore, number[]>();
  if (o.klCoef > 0) {
    await Promise.all(keptTurns.map(async (s) => {
      const t = turnOf(s);
      const lps = await o.teacher!.sampler.computeLogprobs(
        ModelInput.fromInts([...t.observationTokens, ...t.actionTokens]),
      );
      const base = lps.slice(t.observationTokens.length) as number[];
      kl.set(s, t.logprobs.map((lp, k) => -o.klCoef * (lp - base[k])));
    }));
  }

  const trajectories: TurnTokens[][] = [];
  const origins: [number, number][] = [];
  for (const gi of kept) {
    scores[gi].forEach((ep, ei) => {
      const turns = ep.map((s): TurnTokens => {
        const t = turnOf(s);
        const n = t.actionTokens.length;
        const o_ = opd.get(s);
        let adv: number[] | null = null;
        if (o.method === "rl") {
          // A zero advantage teaches nothing (e.g. a constant group): skip its compute.
          s.dispatch = s.rlAdvantage !== 0 ? "rl" : null;
          if (s.rlAdvantage !== 0 || o.klCoef > 0) adv = new Array(n).fill(s.rlAdvantage);
        } else if (o.method === "opd") {
          s.dispatch = o_ ? "opd" : null;
          if (o_) adv = o_.map((a) => o.wOpd * a);
        } else {
          s.dispatch = combineDispatch(o_ !== undefined, s.rlAdvantage === 0 ? 0 : 1);
          if (s.dispatch) {
            adv = Array.from(
              { length: n },
              (_, k) => o.wOpd * (o_?.[k] ?? 0) + o.wRl * s.rlAdvantage,
            );
          }
        }
        const k = kl.get(s);
        if (adv && k) adv = adv.map((a, i) => a + k[i]);
        s.trained = adv !== null;
        return {
          observation: t.observationTokens,
          action: t.actionTokens,
          logprobs: t.logprobs,
          advantage: adv ?? 0,
          train: adv !== null,
        };
      });
      // An episode with nothing to train would only cost a forward-backward pass.
      if (turns.some((t) => t.train)) {
        trajectories.push(turns);
        origins.push([gi, ei]);
      }
    });
  }
  return { trajectories, origins, turns: all, advantageStats, metrics: metrics(all, o) };
}

/**
 * A judge or teacher that fails on every turn of a batch (unreachable, or a prompt longer than
 * its context) would silently train on nothing: that is an error naming it and the cause.
 * Failures on some turns are kept per turn (`TurnScore.error`, `score/errors`).
 */
export class JudgeError extends Error {
  override name = "JudgeError";
}

function failIfAlwaysFails(turns: TurnScore[], who: string): void {
  if (turns.length > 0 && turns.every((s) => s.error)) {
    throw new JudgeError(`${who} failed on every turn: ${turns[0].error}`);
  }
}

/** The chat messages a turn's response answered: earlier turns and this turn's observation. */
export function messagesBefore(episode: Episode, turn: number): ChatMessage[] {
  return episode.turns.slice(0, turn + 1).flatMap((t, i) => [
    { role: "user", content: t.observation },
    ...(i < turn ? [{ role: "assistant", content: t.actionText }] : []),
  ]);
}

function seeded(s: JudgeSampling, offset: number): JudgeSampling {
  return s.seed === undefined ? s : { ...s, seed: s.seed + 1000 * offset };
}

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

function metrics(all: TurnScore[], o: ScoringOptions): Record<string, number> {
  const m: Record<string, number> = {
    "score/trained_turns": all.filter((s) => s.trained).length,
    "score/errors": all.filter((s) => s.error).length,
    "score/w_opd": o.wOpd,
    "score/w_rl": o.wRl,
  };
  const prm = all.filter((s) => s.prm);
  if (prm.length) {
    m["score/prm_eval_score"] = mean(prm.map((s) => s.prm!.score));
    m["score/prm_invalid_vote_frac"] = mean(
      prm.flatMap((s) => s.prm!.votes.map((v) => (v === null ? 1 : 0))),
    );
  }
  if (o.method !== "rl") {
    const asked = all.filter((s) => s.hint !== undefined);
    m["score/hint_accepted_frac"] = asked.length
      ? asked.filter((s) => s.hint).length / asked.length
      : 0;
    const withOpd = all.filter((s) => s.opdMean !== undefined);
    if (withOpd.length) m["score/opd_advantage_mean"] = mean(withOpd.map((s) => s.opdMean!));
    for (const d of ["opd+rl", "opd", "rl"] as const) {
      m[`score/${d}_samples`] = all.filter((s) => s.dispatch === d).length;
    }
  }
  return m;
}
