/**
 * The proxy's records, as the OpenClaw seed keeps them but never truncated (the seed wipes them
 * at every step): `records/conversations.jsonl`, one line per turn once its fate is known (side
 * turns when served; main turns when trained or not, with why), and
 * `records/<method>_scores.jsonl`, one line per scored main turn (PRM votes, the representative
 * judge text, the hint, the dispatch, the advantage), and `records/sessions.jsonl`, one line per
 * session once it is gone (how it ended, its turns, its history breaks). All are append-only.
 * A write that fails (a full disk, a removed directory) is reported and counted, and the next
 * write is tried all the same: one failure never silences the records that follow.
 *
 * @module
 */

import { join } from "node:path";
import type { Message } from "../renderers/types.ts";
import type { Method, ScoredTurn } from "../rl/types.ts";
import { openAIToolCall } from "./completion.ts";
import type { TurnType } from "./metadata.ts";
import type { ServedRequest } from "./options.ts";
import type { CompletedTurn, SessionEnd } from "./session_types.ts";

/** What became of a turn. */
export type TurnStatus = "trained" | "not_trained" | "served" | "recorded";

/** One line of `conversations.jsonl`. */
export interface ConversationRecord {
  time: string;
  session_id: string | null;
  turn_type: TurnType;
  /** The main turn's index in its session (null for side turns). */
  turn_index: number | null;
  sampler_version: number;
  /** The request's messages (for main turns: with the tools declared in the system message). */
  messages: Message[];
  /** The answer, parsed (content, thinking, tool calls). */
  response: Message;
  /** The answer's tool calls as OpenAI's `tool_calls`. */
  tool_calls: ReturnType<typeof openAIToolCall>[];
  next_state: Message[] | null;
  reward: number | null;
  prompt_tokens: number;
  completion_tokens: number;
  /**
   * Which message of `messages` each prompt token came from: `[start, end, message]` token
   * ranges (message -1: the format's own tokens, such as the assistant opening); null when not
   * worked out (side turns, very long histories rendered whole).
   */
  prompt_spans?: [number, number, number][] | null;
  /**
   * The request did not continue its session's previous turn exactly (an edited history, or
   * tokens that could not continue the previous prompt and answer): the turn starts a new
   * token sequence in training, never merged into the previous one.
   */
  history_break?: boolean;
  /**
   * Prompt tokens cut from the middle to fit the context (`proxy.truncate_keep_head`): the
   * prompt trained on is its head and newest tokens. Absent: nothing cut.
   */
  truncated_tokens?: number;
  /** `trained`, `not_trained` (see `reason`), `served` (side turns), `recorded` (no training). */
  status: TurnStatus;
  reason?: string;
  /** The training step that trained the turn. */
  step?: number;
}

/** One line of `<method>_scores.jsonl`. */
export interface ScoreRecord {
  time: string;
  session_id: string;
  turn_index: number;
  sampler_version: number;
  step: number | null;
  reward: number;
  rewarded: boolean;
  prm_score: number | null;
  votes: (number | null)[] | null;
  representative: string | null;
  hint: string | null;
  hint_decisions: (number | null)[] | null;
  opd_mean: number | null;
  rl_advantage: number;
  dispatch: string | null;
  trained: boolean;
  reason?: string;
  errors: string[];
}

/**
 * The record files of a run directory (or of `deno task proxy --record-dir`).
 *
 * @example
 * const records = await ProxyRecords.open(join(runDir, "records"), "opd");
 * await records.conversation(servedRecord(served));
 */
export class ProxyRecords {
  readonly dir: string;
  readonly conversationsPath: string;
  readonly scoresPath: string;
  readonly sessionsPath: string;
  /** Lines that could not be written. */
  failures = 0;
  /** Writes go one after another, so lines never interleave. */
  #chain: Promise<void> = Promise.resolve();

  private constructor(dir: string, method: Method | null) {
    this.dir = dir;
    this.conversationsPath = join(dir, "conversations.jsonl");
    this.scoresPath = join(dir, `${method === "rl" ? "prm" : method ?? "none"}_scores.jsonl`);
    this.sessionsPath = join(dir, "sessions.jsonl");
  }

  /** Opens (creating) the records directory; `method` names the scores file (rl → prm_scores). */
  static async open(dir: string, method: Method | null): Promise<ProxyRecords> {
    await Deno.mkdir(dir, { recursive: true });
    return new ProxyRecords(dir, method);
  }

  /** Appends a turn's line to `conversations.jsonl`. */
  conversation(row: ConversationRecord): Promise<void> {
    return this.#append(this.conversationsPath, row);
  }

  /** Appends a scored turn's line to the scores file. */
  score(row: ScoreRecord): Promise<void> {
    return this.#append(this.scoresPath, row);
  }

  /** Appends an ended session's line to `sessions.jsonl`. */
  session(row: SessionEnd): Promise<void> {
    return this.#append(this.sessionsPath, row);
  }

  /** Waits for every write so far. */
  flush(): Promise<void> {
    return this.#chain;
  }

  /**
   * Appends one whole line. A failed write is one `proxy: records:` line on stderr and a count;
   * it resolves all the same (callers fire and forget), and the chain goes on.
   */
  #append(path: string, row: unknown): Promise<void> {
    const line = JSON.stringify(row) + "\n";
    this.#chain = this.#chain.then(async () => {
      try {
        await Deno.writeTextFile(path, line, { append: true });
      } catch (e) {
        this.failures++;
        console.error(
          `proxy: records: could not append to ${path} (${(e as Error).message}); ` +
            `${this.failures} line(s) lost so far, later lines are still tried`,
        );
      }
    });
    return this.#chain;
  }
}

/** The line of a served side turn. */
export function servedRecord(s: ServedRequest): ConversationRecord {
  return {
    time: s.time,
    session_id: s.sessionId,
    turn_type: s.turnType,
    turn_index: s.index,
    sampler_version: s.samplerVersion,
    messages: s.messages,
    response: s.choice.message,
    tool_calls: (s.choice.message.toolCalls ?? []).map(openAIToolCall),
    next_state: null,
    reward: null,
    prompt_tokens: s.usage.prompt_tokens,
    completion_tokens: s.choice.tokens.length,
    ...(s.truncated ? { truncated_tokens: s.truncated } : {}),
    status: "served",
  };
}

/** The line of a completed main turn. */
export function turnRecord(
  c: CompletedTurn,
  fate: { status: TurnStatus; reason?: string; step?: number },
): ConversationRecord {
  const t = c.turn;
  return {
    time: new Date().toISOString(),
    session_id: c.sessionId,
    turn_type: "main",
    turn_index: c.index,
    sampler_version: t.samplerVersion,
    messages: c.messages,
    response: t.action,
    tool_calls: (t.action.toolCalls ?? []).map(openAIToolCall),
    next_state: t.nextState,
    reward: c.rewarded ? t.reward : null,
    prompt_tokens: t.observationTokens.length,
    completion_tokens: t.actionTokens.length,
    prompt_spans: c.spans,
    history_break: c.historyBreak,
    ...(c.truncated ? { truncated_tokens: c.truncated } : {}),
    status: fate.status,
    ...(fate.reason ? { reason: fate.reason } : {}),
    ...(fate.step !== undefined ? { step: fate.step } : {}),
  };
}

/** The scores line of a scored main turn. */
export function scoreRecord(
  c: CompletedTurn,
  s: ScoredTurn,
  o: { step: number | null; reason?: string },
): ScoreRecord {
  const ev = s.evidence;
  return {
    time: new Date().toISOString(),
    session_id: c.sessionId,
    turn_index: c.index,
    sampler_version: c.turn.samplerVersion,
    step: o.step,
    reward: s.score.rlReward,
    rewarded: c.rewarded,
    prm_score: ev.prm?.score ?? null,
    votes: ev.prm?.votes ?? null,
    representative: ev.prm?.representative ?? null,
    hint: ev.hint ?? null,
    hint_decisions: ev.hintDecisions ?? null,
    opd_mean: s.score.opdMean ?? null,
    rl_advantage: s.score.rlAdvantage,
    dispatch: s.score.dispatch,
    trained: s.score.trained,
    ...(o.reason ? { reason: o.reason } : {}),
    errors: ev.errors,
  };
}
