/**
 * The proxy's session model: who a request says it is ({@link SessionClaim}), what it found
 * ({@link SessionMatch}), a main turn as served and as completed, one tracked session, and the
 * record a session leaves. {@link AgentSessions} (sessions.ts) keeps them.
 *
 * @module
 */

import type { Message } from "../renderers/types.ts";
import type { Turn, TurnStopReason } from "../rl/types.ts";
import type { MessageSpan } from "./bridge.ts";

/**
 * How requests without the session's token may continue it: `token` (never) or `history` (when
 * they carry its label and extend its conversation exactly).
 */
export type SessionBinding = "token" | "history";

/** Who a main request says it is. */
export interface SessionClaim {
  /** `X-Session-Token`: the secret the proxy gave the session's opener. */
  token: string | null;
  /** The client's own name for its session: a label, not a credential. */
  label: string | null;
  /** The reward of the session's previous main turn, when the client has one. */
  reward: number | null;
}

/** How a main turn got its end. */
export type TurnEnd = "next_state" | "done" | "idle" | "closed";

/** A main turn whose next state is known (or whose session ended). */
export interface CompletedTurn {
  sessionId: string;
  /** The turn's index among its session's main turns. */
  index: number;
  turn: Turn;
  /** The request's messages (tools declared in the system message): what the policy answered. */
  messages: Message[];
  /** Whether the client sent a reward for this turn. */
  rewarded: boolean;
  end: TurnEnd;
  /** Which message of `messages` each prompt token came from (null: not worked out). */
  spans: MessageSpan[] | null;
  /** Its request did not continue the session's previous turn exactly (messages or tokens). */
  historyBreak: boolean;
  /** Prompt tokens cut to fit the context (`proxy.truncate_keep_head`; 0: none). */
  truncated: number;
}

/** A main turn as served, waiting for its next state. */
export interface ServedTurn {
  /** The request's messages, as normalised (used to match the next request). */
  requestMessages: Message[];
  /** The same with the tools declared in the system message (the prompt's messages). */
  promptMessages: Message[];
  observation: Message[];
  observationTokens: number[];
  action: Message;
  actionTokens: number[];
  logprobs: number[];
  stopReason: TurnStopReason;
  samplerVersion: number;
  /** The answer's id, when the API lets a later request continue from it (Responses). */
  responseId?: string;
  /** Which message each prompt token came from (null: not worked out). */
  spans?: MessageSpan[] | null;
  /** The request did not continue its session's previous turn exactly (messages or tokens). */
  historyBreak?: boolean;
  /** Prompt tokens cut to fit the context (0 or absent: none). */
  truncated?: number;
}

/** What a main request found when it arrived. */
export interface SessionMatch {
  sessionId: string;
  /** The session's token, for the answer's `X-Session-Token` (only to the session's opener). */
  token: string | null;
  /** The messages this request added since the session's previous main turn. */
  observation: Message[];
  /** The index the turn will have once served. */
  index: number;
  /** How the request found its session. */
  how: "opened" | "token" | "history";
  /** The request's history does not extend the session's (counted in `historyBreaks`). */
  historyBreak: boolean;
  /** The previous main turn when this request extends it (the prompt may continue its tokens). */
  previous: ServedTurn | null;
  /**
   * The request carried a reward but opened its session (`history` binding): the reward has no
   * turn to go to (counted in `rewardsWithoutTurn`).
   */
  unclaimedReward: boolean;
}

/** A committed turn, to take back if its answer is not delivered. */
export interface Commit {
  readonly session: AgentSession;
  readonly served: ServedTurn;
  readonly before: Pick<AgentSession, "last" | "turns" | "pending">;
}

/** One agent session as the proxy tracks it: its turns, the pending one, its last activity. */
export interface AgentSession {
  id: string;
  /** sha256 of the session's token (the token itself is only handed to its opener). */
  tokenHash: string;
  token: string;
  label: string | null;
  opened: number;
  lastActivity: number;
  turns: number;
  last: ServedTurn | null;
  /** Whether the last turn still waits for its next state. */
  pending: boolean;
  /** Requests of the session whose history did not extend the session's conversation. */
  historyBreaks: number;
  keys: string[];
}

/** The record a session leaves when it is gone (`records/sessions.jsonl`). */
export interface SessionEnd {
  time: string;
  session_id: string;
  /** The client's own name for it, when it gave one. */
  label: string | null;
  opened: string;
  turns: number;
  history_breaks: number;
  /** `done` (the client said so), `idle`, `closed` (the proxy stopped). */
  end: "done" | "idle" | "closed";
  /** Whether its last turn got a reward after the session ended (`/done` within the window). */
  late_reward: boolean;
}

/** Options of {@link AgentSessions}. */
export interface AgentSessionsOptions {
  /** A session idle this long ends; null: never. */
  idleMs: number | null;
  /** How requests without a token may continue a session (default `token`). */
  binding?: SessionBinding;
  /**
   * How long an ended session's unrewarded last turn waits for `/done` to reward it (default
   * 0: it completes at once).
   */
  lateRewardMs?: number;
  /** Most open sessions; a request that would open one more is a 429 (default: no cap). */
  maxSessions?: number | null;
  /** Called with every completed main turn. */
  onComplete(turn: CompletedTurn): void;
  /** Called once for every session that is gone. */
  onEnd?(end: SessionEnd): void;
  /** The clock (tests). */
  now?: () => number;
}
