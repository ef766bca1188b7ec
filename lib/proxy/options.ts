/**
 * What the proxy is given and what it reports: its options ({@link ProxyOptions}), its counters
 * ({@link ProxyStats}) and each answered request ({@link ServedRequest}), shared by the app
 * (app.ts) and the turn core (serve_turn.ts).
 *
 * @module
 */

import type { Message, Renderer } from "../renderers/types.ts";
import type { SampledChoice, Usage } from "./completion.ts";
import type { TurnType } from "./metadata.ts";
import type { Policy } from "./policy.ts";
import type { CompletedTurn, SessionBinding, SessionEnd } from "./session_types.ts";

/** Options of the proxy. */
export interface ProxyOptions {
  policy: Policy;
  /** The policy's renderer (its chat format, tools and tool-call parsing). */
  renderer: Renderer;
  /** The policy's base model; clients may ask for it by this name too. */
  modelName: string;
  /** The model name clients use (default: the policy's). */
  servedModelName?: string | null;
  /** Bearer key clients must send; null or empty: no auth. */
  apiKey?: string | null;
  /** The policy's context in tokens. */
  contextLength: number;
  /**
   * Opt-in cut of prompts over the context: keep this many head tokens and the newest ones
   * (generate.ts `cutPrompt`); null (default): such a prompt is a 400 `context_length_exceeded`.
   */
  truncateKeepHead?: number | null;
  /** Turn type of requests that do not say (default `main`). */
  defaultTurnType?: TurnType;
  /** Sessions idle this long end, their last turn without a next state (null: never). */
  sessionIdleS?: number | null;
  /** How requests without a session's token may continue it (default `token`: never). */
  sessionBinding?: SessionBinding;
  /** Most open sessions; a request that would open one more is a 429 (default: no cap). */
  maxSessions?: number | null;
  /** Largest reward magnitude a client may send (default {@link DEFAULT_REWARD_BOUND}). */
  rewardBound?: number;
  /** How long an ended session's unrewarded last turn waits for a late `/done` reward (0: none). */
  lateRewardS?: number;
  /** Largest request body (default 16 MiB). */
  maxBodyBytes?: number;
  /** Most choices per request (default 8). */
  maxN?: number;
  /** Completion tokens when a request gives no limit (default 2048, the seed's). */
  defaultMaxTokens?: number;
  /** How long a request waits for a paused policy before a 503 (default 300 s, the seed's). */
  pauseTimeoutS?: number;
  /** Every completed main turn (next state arrived, or its session ended). */
  onComplete?: (turn: CompletedTurn) => void;
  /** Every answered request, main or side. */
  onServed?: (served: ServedRequest) => void;
  /** Every session once it is gone (for `records/sessions.jsonl`). */
  onSessionEnd?: (end: SessionEnd) => void;
}

/** Counters of a running proxy. */
export interface ProxyStats {
  requests: number;
  mainTurns: number;
  sideTurns: number;
  /** Requests whose client went away before the answer was delivered (their turn is lost). */
  disconnected: number;
  /** Error answers by status. */
  errors: Record<string, number>;
  /** Main requests whose history did not extend their session's conversation. */
  historyBreaks: number;
  /** Rewards on requests that opened their session (`history` binding): they reward nothing. */
  rewardsWithoutTurn: number;
}

/** An answered request, for records and counts. */
export interface ServedRequest {
  time: string;
  sessionId: string | null;
  turnType: TurnType;
  /** The main turn's index in its session (null for side turns). */
  index: number | null;
  samplerVersion: number;
  /** The request's messages, normalised. */
  messages: Message[];
  /** The first choice (the one a conversation continues with, and a main turn trains on). */
  choice: SampledChoice;
  finishReason: string;
  usage: Usage;
  /** Milliseconds spent in the sampler. */
  samplerMs: number;
  /** Prompt tokens cut to fit the context (`proxy.truncate_keep_head`; 0: none). */
  truncated: number;
}
