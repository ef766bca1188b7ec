/**
 * The decision rules of OpenClaw-style scoring, as its code does them (not its READMEs): PRM
 * vote parsing and majority, hint extraction and selection, the at-least-one rule, the
 * combine dispatch, and the OPD per-token advantage. Pure functions: the judges that produce
 * the texts run on any sampler.
 *
 * @module
 */

import type { Dispatch, Vote } from "../rl/types.ts";

export type { Vote };

/**
 * The vote in a judge's output: the **last** `\boxed{N}` with N a single, optionally signed
 * digit. Anything else (no box, a value outside {1, −1, 0}) is a failed vote: null.
 */
export function parseVote(text: string): Vote | null {
  const matches = [...text.matchAll(/\\boxed\{\s*([+-]?\d)\s*\}/g)];
  if (matches.length === 0) return null;
  const n = Number(matches.at(-1)![1]);
  return n === 1 || n === -1 || n === 0 ? n as Vote : null;
}

/** The majority of M judge outputs, with the votes and the text that represents the winner. */
export interface MajorityResult {
  /** The winning vote (0 on a tie or with no valid vote). */
  score: Vote;
  /** Each output's vote (null: none found). */
  votes: (Vote | null)[];
  /** The first output whose vote is the winning one (stored with the votes). */
  representative: string | null;
}

/**
 * Majority vote: failed votes are dropped; none left gives 0; a tie for first place gives 0.
 *
 * @example
 * majorityVote(["…\\boxed{1}", "\\boxed{1}", "\\boxed{-1}"]).score; // 1
 */
export function majorityVote(outputs: string[]): MajorityResult {
  const votes = outputs.map(parseVote);
  const counts = new Map<Vote, number>();
  for (const v of votes) if (v !== null) counts.set(v, (counts.get(v) ?? 0) + 1);
  if (counts.size === 0) return { score: 0, votes, representative: null };
  const ranked = [...counts.entries()].sort((a, b) => b[1] - a[1]);
  if (ranked.length > 1 && ranked[0][1] === ranked[1][1]) {
    return { score: 0, votes, representative: null };
  }
  const score = ranked[0][0];
  return { score, votes, representative: outputs[votes.indexOf(score)] };
}

/** A hint judge's answer: its decision and, only with decision 1, the hint. */
export interface HintVote {
  /** 1 accept, -1 reject, null: no valid decision. */
  decision: 1 | -1 | null;
  /** The hint (only with decision 1). */
  hint: string | null;
}

/** Parses `\boxed{1}` / `\boxed{-1}` and the text between `[HINT_START]` and `[HINT_END]`. */
export function parseHintVote(text: string): HintVote {
  const v = parseVote(text);
  const decision = v === 1 || v === -1 ? v : null;
  const m = /\[HINT_START\]([\s\S]*?)\[HINT_END\]/.exec(text);
  return { decision, hint: decision === 1 && m ? m[1].trim() : null };
}

/**
 * The hint to teach with: among votes of 1 whose hint is longer than 10 characters, the
 * longest; null when none qualifies (then the turn gives no OPD sample).
 */
export function selectBestHint(outputs: string[]): string | null {
  let best: string | null = null;
  for (const o of outputs) {
    const { decision, hint } = parseHintVote(o);
    if (
      decision === 1 && hint && hint.length > 10 && (best === null || hint.length > best.length)
    ) {
      best = hint;
    }
  }
  return best;
}

/** A message to a judge or teacher: a role and plain text. */
export interface JudgeMessage {
  /** Who speaks (`system`, `user`, `assistant`). */
  role: string;
  /** The text. */
  content: string;
}

/**
 * The teacher's prompt: the hint appended to the last user message (the last message when no
 * user message exists), as `"\n\n[user's hint / instruction]\n<hint>"`.
 */
export function appendHintToMessages(messages: JudgeMessage[], hint: string): JudgeMessage[] {
  const out = messages.map((m) => ({ ...m }));
  let i = out.findLastIndex((m) => m.role === "user");
  if (i < 0) i = out.length - 1;
  if (i < 0) throw new Error("appendHintToMessages: no messages to append the hint to");
  out[i].content += `\n\n[user's hint / instruction]\n${hint}`;
  return out;
}

/**
 * OpenClaw's at-least-one rule, per session, in turn order: a turn with a next state that
 * scored 0 is promoted (trained on, with its reward left at 0) if no earlier turn of the
 * session was kept. Turns without a next state are never promoted; −1 and +1 are always kept.
 */
export class AtLeastOneRule {
  #kept = new Map<string, number>();

  /** Whether this turn trains (its loss mask); call in turn order within a session. */
  decide(session: string, turn: { hasNextState: boolean; score: number | null }): boolean {
    const score = turn.score ?? 0;
    let exclude = !turn.hasNextState || score === 0;
    if (exclude && turn.hasNextState && (this.#kept.get(session) ?? 0) === 0) exclude = false;
    if (!exclude) this.#kept.set(session, (this.#kept.get(session) ?? 0) + 1);
    return !exclude;
  }

  /** The session ended: forget its count. */
  endSession(session: string): void {
    this.#kept.delete(session);
  }
}

/**
 * Combine dispatch: a hint and a ±1 score give OPD and RL; a hint alone OPD (reward 0);
 * a ±1 score alone RL (the teacher log-probs are the student's, so the OPD term is 0);
 * neither, nothing.
 */
export function combineDispatch(hintAccepted: boolean, evalScore: number): Dispatch {
  if (hintAccepted) return evalScore !== 0 ? "opd+rl" : "opd";
  return evalScore !== 0 ? "rl" : null;
}

/** The OPD per-token advantage: teacher log-prob − student log-prob of each response token. */
export function opdAdvantages(teacherLogprobs: number[], studentLogprobs: number[]): number[] {
  if (teacherLogprobs.length !== studentLogprobs.length) {
    throw new Error(
      `opdAdvantages: ${teacherLogprobs.length} teacher and ${studentLogprobs.length} student logprobs`,
    );
  }
  return teacherLogprobs.map((t, i) => t - studentLogprobs[i]);
}

/**
 * Combine's per-token advantage with separate, logged coefficients (OpenClaw reuses one
 * coefficient for both): `w_opd·(teacher − student) + w_rl·reward`.
 */
export function combinedAdvantages(
  opd: number[],
  reward: number,
  { wOpd, wRl }: { wOpd: number; wRl: number },
): number[] {
  return opd.map((a) => wOpd * a + wRl * reward);
}
