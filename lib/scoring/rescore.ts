/**
 * What-if re-scoring of a recorded group: the step's rollout records (lib/rl/records.ts) turned
 * back into the groups and evidence composition took, composed again by
 * {@link composeAdvantages} under other settings, and set beside what the run trained. No
 * sampling, no network: only what the records hold. The run viewer runs it in the browser
 * (bundled from this file, not copied) and notebooks through lib/viz.
 *
 * What the records allow, and what they do not:
 * - advantage mode, baseline, normalisation, clamps, constant groups, down-sampling, reward
 *   reduction and non-final-turn rewards: exact (turn rewards are stored in full);
 * - the reward source `env` or `success` exact; `prm` from the stored PRM votes (the
 *   at-least-one decisions made as turns completed are not stored: the rule decides again);
 * - opd and combine weights: from the stored teacher and sampler log-probs (as stored: the
 *   viewer keeps 5 significant digits) and hints;
 * - the batch modes (`batch_zscore`, `discounted_rebn`) and `drop_keep_one` see the whole step,
 *   so the step's every record is given, not just the group's;
 * - a KL penalty needs the reference log-probs, which are not stored: a what-if with
 *   `klCoef > 0` is refused;
 * - an environment's own reward shaping (a mix's): exact from version 3 records, which store the
 *   episode's `shaped_reward`; a version 2 record did not, so its turn rewards are reduced by
 *   the advantage settings instead;
 * - the loss's clip and ratio settings: the records hold the sampler's log-probs only, so at
 *   the step's first pass every token's ratio is 1 (inside any clip range around 1) and the
 *   per-token gradient weight is its advantage, whatever the clip.
 *
 * "Gradient weight": a policy-gradient loss at ratio 1 weights each action token's log-prob
 * gradient by its advantage (the datums' `advantages`, 0 on prompt tokens), so a group's total
 * is Σ|advantage| over its trained action tokens.
 *
 * @module
 */

import { explainGroup } from "../advantages/untrained.ts";
import { type RolloutRecord, rolloutRecords } from "../rl/records.ts";
import {
  type EpisodeGroup,
  isSolved,
  type Turn,
  type TurnEvidence,
  type TurnStopReason,
} from "../rl/types.ts";
import { composeAdvantages, type MethodSettings } from "./compose.ts";

/**
 * A rollout record as the rescoring reads it: the store's record, or the viewer's episode whose
 * token ids became texts (only the number of action tokens matters here).
 */
export type RecordedEpisode = Omit<RolloutRecord, "turns" | "schema_version"> & {
  turns: (Omit<RolloutRecord["turns"][number], "tokens"> & {
    tokens?: {
      ids?: number[];
      text?: string[];
      logprobs: number[];
      advantages: number[] | null;
      teacher_logprobs?: number[];
    };
  })[];
};

/** One episode of a what-if: per turn, the tokens' advantages as trained and as re-scored. */
export interface WhatIfEpisode {
  /** The episode's index in its group. */
  episode: number;
  /** Its total reward. */
  totalReward: number;
  /** Per turn: the number of action tokens. */
  actionTokens: number[];
  /** Per turn: the recorded per-token advantages (null: not trained). */
  before: (number[] | null)[];
  /** Per turn: the re-scored per-token advantages (null: not trained). */
  after: (number[] | null)[];
  /** Per turn: the RL advantage as recorded and as re-scored. */
  rlBefore: number[];
  /** Per turn: the RL advantage as re-scored. */
  rlAfter: number[];
  /** Left out by down-sampling under the new settings. */
  downsampled: boolean;
}

/** A group's what-if. */
export interface WhatIfResult {
  /** The group's id. */
  groupId: string;
  /** The step it was trained at. */
  step: number;
  /** Its episodes' what-ifs. */
  episodes: WhatIfEpisode[];
  /** Σ|advantage| over the group's trained action tokens, as trained and as re-scored. */
  weightBefore: number;
  /** Σ|advantage| as re-scored. */
  weightAfter: number;
  /** Whether the group is kept (the constant-group rule) under the new settings. */
  kept: boolean;
  /** Why the group trains nothing under the new settings (null: it trains). */
  untrained: string | null;
  /** Why it trained nothing in the run (null: it trained). */
  untrainedBefore: string | null;
}

/**
 * The groups and evidence of a step's records, as composition took them: failed episodes
 * (no turns) left out, groups in the order of their first record.
 */
export function recordsToGroups(
  records: RecordedEpisode[],
): { groups: EpisodeGroup[]; evidence: Map<Turn, TurnEvidence> } {
  const byId = new Map<string, RecordedEpisode[]>();
  for (const r of records) {
    if (r.turns.length === 0) continue;
    byId.set(r.group_id, [...(byId.get(r.group_id) ?? []), r]);
  }
  const evidence = new Map<Turn, TurnEvidence>();
  const groups = [...byId.entries()].map(([id, eps]): EpisodeGroup => ({
    id,
    envId: eps[0].env_id,
    envSeed: eps[0].env_seed,
    tags: eps[0].tags,
    episodes: [...eps].sort((a, b) => a.episode - b.episode).map((r) => ({
      envId: r.env_id,
      totalReward: r.total_reward,
      ...(r.shaped_reward !== undefined ? { shapedReward: r.shaped_reward } : {}),
      stopReason: r.stop_reason as EpisodeGroup["episodes"][number]["stopReason"],
      ...(r.error ? { error: r.error } : {}),
      turns: r.turns.map((t) => {
        const n = t.tokens?.logprobs.length ?? t.ac_tokens;
        const turn: Turn = {
          observation: t.observation,
          observationTokens: [],
          action: t.action,
          actionTokens: t.tokens?.ids ?? new Array(n).fill(0),
          logprobs: t.tokens?.logprobs ?? new Array(n).fill(t.mean_logprob),
          reward: t.reward,
          nextState: t.next_state,
          stopReason: t.stop_reason as TurnStopReason,
          samplerVersion: t.sampler_version,
        };
        const ev = t.evidence;
        evidence.set(turn, {
          ...(ev.prm ? { prm: ev.prm as TurnEvidence["prm"] } : {}),
          ...(ev.hint !== undefined ? { hint: ev.hint } : {}),
          ...(ev.hint_decisions
            ? { hintDecisions: ev.hint_decisions as TurnEvidence["hintDecisions"] }
            : {}),
          ...(t.tokens?.teacher_logprobs ? { teacherLogprobs: t.tokens.teacher_logprobs } : {}),
          errors: ev.errors,
        });
        return turn;
      }),
    })),
  }));
  return { groups, evidence };
}

/**
 * Re-scores group `groupId` of a step under `settings`: `records` are the step's every record
 * (batch-wide modes see the whole step).
 *
 * @example
 * const run = methodSettings(cfg);
 * const r = whatIf(stepRecords, "s000001-g002", {
 *   ...run,
 *   advantages: { ...run.advantages, mode: "group_zscore" },
 * });
 * r.weightAfter - r.weightBefore; // the change in the group's total gradient weight
 */
export function whatIf(
  records: RecordedEpisode[],
  groupId: string,
  settings: MethodSettings,
): WhatIfResult {
  if (settings.klCoef > 0) {
    throw new Error(
      "what-if: a KL penalty needs the reference log-probs, which the rollout store does not " +
        "keep; set the KL coefficient to 0",
    );
  }
  const mine = records.filter((r) => r.group_id === groupId);
  if (mine.length === 0) throw new Error(`what-if: no group ${groupId} in these records`);
  const step = mine[0].step;
  const { groups, evidence } = recordsToGroups(records.filter((r) => r.step === step));
  const composed = composeAdvantages(groups, evidence, settings);
  const scored = composed.groups.find((g) => g.group.id === groupId);
  const played = mine.filter((r) => r.turns.length > 0).sort((a, b) => a.episode - b.episode);
  const episodes: WhatIfEpisode[] = played.map((r, i) => {
    const s = scored?.episodes[i];
    return {
      episode: r.episode,
      totalReward: r.total_reward,
      actionTokens: r.turns.map((t) => t.tokens?.logprobs.length ?? t.ac_tokens),
      before: r.turns.map((t) => t.tokens?.advantages ?? null),
      after: s ? s.turns.map((t) => t.advantages) : r.turns.map(() => null),
      rlBefore: r.turns.map((t) => t.score.rl_advantage),
      rlAfter: s ? s.turns.map((t) => t.score.rlAdvantage) : r.turns.map(() => 0),
      downsampled: s?.downsampled === true,
    };
  });
  const weight = (xs: (number[] | null)[][]) =>
    xs.flat().reduce((n, a) => n + (a ?? []).reduce((m, x) => m + Math.abs(x), 0), 0);
  const after = scored ? rolloutRecords(step, [scored], (e) => isSolved(e.totalReward)) : [];
  return {
    groupId,
    step,
    episodes,
    weightBefore: weight(episodes.map((e) => e.before)),
    weightAfter: weight(episodes.map((e) => e.after)),
    kept: scored?.kept ?? false,
    untrained: scored ? explainGroup(after) : "not played",
    untrainedBefore: explainGroup(mine),
  };
}
