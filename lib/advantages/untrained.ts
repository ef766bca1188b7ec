/**
 * Why a group, or a whole step, trained nothing, in words, read from the rollout store's records
 * (lib/rl/records.ts) of the step. One function for every place that says it: the trainer's
 * step line and `events.jsonl` (lib/trainer/failures.ts), and the run viewer's group and step
 * views, which run it in the browser (it imports nothing but the constant-group rule).
 *
 * The causes, in the order they are told:
 * - every episode of the group failed (an error, a timeout);
 * - the group was excluded before training (a mix's failing group, the constant-group rule),
 *   in the record's own words;
 * - constant rewards: every episode had the same reward, so a group baseline leaves no signal
 *   (all solved is said apart: nothing was left to learn);
 * - no hint (opd, combine): no turn had an accepted hint, or no next state to take one from;
 * - parse errors and failed scoring calls (teacher, judge);
 * - every token masked: turns with an RL advantage that composition left untrained (PRM's
 *   at-least-one rule, combine's dispatch);
 * - otherwise: no turn had a nonzero advantage.
 *
 * Worked example: a group of 4 GuessTheNumber episodes that all ended `parse_error` with
 * reward −0.1 reads "constant rewards (every episode −0.1): a group baseline leaves no signal;
 * 4/4 episodes ended in a parse error".
 *
 * @module
 */

import { isConstantGroup } from "./shaping.ts";

/**
 * The fields of a rollout record the explanation reads (a `RolloutRecord`, or the viewer's
 * episode, whose token ids became texts).
 */
export interface EpisodeOutcome {
  group_id: string;
  group_kept?: boolean;
  excluded_reason?: string;
  total_reward: number;
  success?: boolean;
  stop_reason: string;
  error?: string;
  turns: {
    next_state?: unknown[];
    evidence?: { hint?: string | null; errors?: string[] };
    tokens?: { advantages?: number[] | null; teacher_logprobs?: number[] };
    /** `reward` is a version 2 record's name of `rl_reward` (lib/rl/records.ts). */
    score?: { rl_reward?: number; reward?: number; rl_advantage?: number; trained?: boolean };
  }[];
}

/** One cause of a group's training nothing. */
export interface UntrainedCause {
  kind:
    | "failed"
    | "excluded"
    | "constant"
    | "solved"
    | "no_next_state"
    | "no_hint"
    | "parse_errors"
    | "scoring_errors"
    | "masked"
    | "zero_advantage";
  /** The cause in words, e.g. `constant rewards (every episode 1): …`. */
  text: string;
}

/** `excluded_reason` of the trainer's records of failed episodes. */
const FAILED_EPISODE = "episode failed";

/** Whether any turn of the episodes was trained. */
function trainedAny(episodes: EpisodeOutcome[]): boolean {
  return episodes.some((e) => e.turns.some((t) => t.score?.trained === true));
}

function failed(e: EpisodeOutcome): boolean {
  return (e.error !== undefined || e.excluded_reason === FAILED_EPISODE) && e.turns.length === 0;
}

/** The reward the RL term compared an episode on: the sum of its turns' scored rewards. */
function scoredReward(e: EpisodeOutcome): number {
  const rs = e.turns.map((t) => t.score?.rl_reward ?? t.score?.reward)
    .filter((r): r is number => r !== undefined);
  return rs.length ? rs.reduce((a, b) => a + b, 0) : e.total_reward;
}

const fmt = (x: number) => String(Number(x.toPrecision(4)));

/**
 * Why one group (its episodes' records) trained nothing, cause by cause; null when a turn of it
 * trained.
 *
 * @example
 * groupUntrainedCauses(records.filter((r) => r.group_id === "s000001-g002"));
 * // [{ kind: "constant", text: "constant rewards (every episode 1): …" }]
 */
export function groupUntrainedCauses(episodes: EpisodeOutcome[]): UntrainedCause[] | null {
  if (episodes.length === 0 || trainedAny(episodes)) return null;
  const played = episodes.filter((e) => !failed(e));
  const causes: UntrainedCause[] = [];
  if (played.length === 0) {
    const first = episodes.find((e) => e.error)?.error ?? "no error recorded";
    return [{ kind: "failed", text: `every episode failed (${episodes.length}; first: ${first})` }];
  }
  const excluded = played.find((e) => e.excluded_reason !== undefined || e.group_kept === false);
  if (excluded && played.every((e) => e.excluded_reason !== undefined || e.group_kept === false)) {
    causes.push({
      kind: "excluded",
      text: `excluded: ${excluded.excluded_reason ?? "dropped by the advantage pipeline"}`,
    });
  }
  // Down-sampling left some episodes out of a kept group: the baseline saw only the others.
  const compared = played.filter((e) => !e.excluded_reason?.startsWith("down-sampled"));
  const rewards = compared.map(scoredReward);
  const turns = played.flatMap((e) => e.turns);
  const rlSignal = turns.some((t) => (t.score?.rl_advantage ?? 0) !== 0);
  if (!rlSignal && played.length > 1 && isConstantGroup(rewards)) {
    const kept = compared.length < played.length
      ? ` among the ${compared.length} episodes down-sampling kept`
      : "";
    causes.push(
      compared.every((e) => e.success === true)
        ? {
          kind: "solved",
          text: `every episode solved its task (reward ${fmt(rewards[0])}${kept}): nothing ` +
            "left to learn",
        }
        : {
          kind: "constant",
          text:
            `constant rewards (every episode ${fmt(rewards[0])}${kept}): a group baseline leaves ` +
            "no signal (a larger --group-size or rewards with partial credit give one)",
        },
    );
  }
  const asked = turns.filter((t) => t.evidence && "hint" in t.evidence);
  if (asked.length && asked.every((t) => !t.evidence!.hint)) {
    const noNext = asked.filter((t) => !t.next_state?.length).length;
    causes.push(
      noNext === asked.length
        ? {
          kind: "no_next_state",
          text: `no hint: none of ${asked.length} turns has a next state to take a hint from ` +
            "(opd and combine need the reply that followed an action)",
        }
        : {
          kind: "no_hint",
          text: `no hint: none accepted on ${asked.length} turns` +
            (noNext ? ` (${noNext} without a next state)` : ""),
        },
    );
  }
  const parse = played.filter((e) => e.stop_reason === "parse_error").length;
  if (parse > 0) {
    causes.push({
      kind: "parse_errors",
      text: `${parse}/${played.length} episodes ended in a parse error`,
    });
  }
  const errs = turns.filter((t) => t.evidence?.errors?.length);
  if (errs.length) {
    causes.push({
      kind: "scoring_errors",
      text: `scoring failed on ${errs.length} turns (${errs[0].evidence!.errors![0]})`,
    });
  }
  if (causes.length === 0 && rlSignal) {
    causes.push({
      kind: "masked",
      text: `every token masked: ${turns.length} turns had an RL advantage but none was ` +
        "trained (the at-least-one rule of PRM rewards, or the method's dispatch)",
    });
  }
  if (causes.length === 0) {
    causes.push({ kind: "zero_advantage", text: "no turn had a nonzero advantage" });
  }
  return causes;
}

/**
 * Why one group trained nothing, in one line; null when it trained.
 *
 * @example
 * explainGroup(records.filter((r) => r.group_id === "s000001-g002"));
 * // "constant rewards (every episode 1): a group baseline leaves no signal …"
 */
export function explainGroup(episodes: EpisodeOutcome[]): string | null {
  return groupUntrainedCauses(episodes)?.map((c) => c.text).join("; ") ?? null;
}

/**
 * Why a step (every record of it: trained, excluded and failed episodes) trained nothing, in
 * one line: the groups' causes counted; null when a group of it trained. The trainer prints
 * it as `step N trained nothing: …` and records it in `events.jsonl`.
 *
 * @example
 * explainStep(await readJsonl("rollouts/iteration_000003.jsonl"));
 * // "every group had one reward in all its episodes (constant groups: no signal; …)"
 */
export function explainStep(records: EpisodeOutcome[]): string | null {
  if (records.length === 0) return "no groups were played";
  const groups = new Map<string, EpisodeOutcome[]>();
  for (const r of records) groups.set(r.group_id, [...(groups.get(r.group_id) ?? []), r]);
  const causes = [...groups.values()].map(groupUntrainedCauses);
  if (causes.some((c) => c === null)) return null;
  const all = causes as UntrainedCause[][];
  if (records.every(failed)) {
    const first = records.find((e) => e.error)?.error ?? "no error recorded";
    return `every rollout failed (${records.length}; first: ${first})`;
  }
  const parts: string[] = [];
  const groupsOf = (n: number) => `${n} group${n > 1 ? "s" : ""}`;
  const byText = new Map<string, number>();
  for (const c of all.flat()) {
    if (c.kind === "excluded" || c.kind === "failed") {
      byText.set(c.text, (byText.get(c.text) ?? 0) + 1);
    }
  }
  for (const [text, n] of byText) {
    parts.push(text.startsWith("excluded") ? `${groupsOf(n)} ${text}` : `${groupsOf(n)}: ${text}`);
  }
  const played = all.filter((cs) => !cs.some((c) => c.kind === "excluded" || c.kind === "failed"));
  const having = (k: UntrainedCause["kind"]) =>
    played.filter((cs) => cs.some((c) => c.kind === k)).length;
  // A missing hint first: opd trains on hints, not on rewards, so it is the cause there.
  const STEP_WORDS: [UntrainedCause["kind"], string, string][] = [
    [
      "no_next_state",
      "no hint: no turn has a next state to take a hint from (opd and combine need the reply " +
      "that followed an action)",
      "had no next state to take a hint from",
    ],
    [
      "no_hint",
      "no hint: no turn had one accepted (from its next observation or the hint judge)",
      "had no accepted hint",
    ],
    [
      "masked",
      "every token masked: turns with an RL advantage were not trained (the at-least-one rule " +
      "of PRM rewards, or the method's dispatch)",
      "had every token masked",
    ],
  ];
  for (const [kind, every, some] of STEP_WORDS) {
    const n = having(kind);
    if (n > 0) parts.push(n === played.length ? every : `${groupsOf(n)} ${some}`);
  }
  const solved = having("solved"), constant = having("constant");
  if (played.length > 0 && solved === played.length) {
    parts.push("every group solved its task in all episodes (constant reward)");
  } else if (played.length > 0 && solved + constant === played.length) {
    parts.push(
      "every group had one reward in all its episodes (constant groups: no signal; a larger " +
        "--group-size or rewards with partial credit give one)",
    );
  } else if (solved + constant > 0) {
    parts.push(`${solved + constant} of ${played.length} groups had one reward in all episodes`);
  }
  const turns = records.flatMap((r) => r.turns);
  const eps = records.filter((r) => !failed(r));
  const parse = eps.filter((e) => e.stop_reason === "parse_error").length;
  if (parse > 0) parts.push(`${parse}/${eps.length} episodes ended in a parse error`);
  const errs = turns.filter((t) => t.evidence?.errors?.length);
  if (errs.length) {
    parts.push(`scoring failed on ${errs.length} turns (${errs[0].evidence!.errors![0]})`);
  }
  if (parts.length === 0) parts.push("no turn had a nonzero advantage");
  return parts.join("; ");
}
