/**
 * The session metadata of a request, as the OpenClaw seed reads it, plus what OpenClaw itself
 * sends: the session id from `X-Session-Id`, the body's `session_id`, or OpenClaw's affinity
 * headers (`session_id`, `x-session-affinity`); the turn type from `X-Turn-Type` or `turn_type`
 * (default configurable, `main` as in the seed's later version); the end of a session from
 * `X-Session-Done` or `session_done`; and a reward for the session's previous main turn from
 * `X-Turn-Reward` or the body's `reward`.
 *
 * @module
 */

import { ProxyError } from "./errors.ts";
import type { ChatCompletionRequest } from "./request.ts";

/** Main turns are trained; side turns (heartbeats, memory upkeep) are served only. */
export type TurnType = "main" | "side";

/** A request's session metadata. */
export interface TurnMeta {
  /** Null: none given (the session is found by prefix match, or a new one starts). */
  sessionId: string | null;
  turnType: TurnType;
  /** The session ends with this request (its last turn is flushed without a next state). */
  done: boolean;
  /** The reward of the session's previous main turn, when the client has one. */
  reward: number | null;
}

/** Headers that carry a session id, in order of precedence after `X-Session-Id`. */
const AFFINITY_HEADERS = ["session_id", "x-session-affinity"] as const;

const TRUE = new Set(["1", "true", "yes", "on"]);

/**
 * The metadata of a request from its headers and body (headers win, as in the seed).
 *
 * @example
 * turnMeta(new Headers({ "X-Session-Id": "s1" }), body, "main"); // { sessionId: "s1", ... }
 */
export function turnMeta(
  headers: Headers,
  body: Pick<ChatCompletionRequest, "session_id" | "turn_type" | "session_done" | "reward">,
  defaultTurnType: TurnType,
): TurnMeta {
  const header = (name: string) => {
    const v = headers.get(name)?.trim();
    return v ? v : null;
  };
  const sessionId = header("x-session-id") ??
    (body.session_id == null || body.session_id === "" ? null : String(body.session_id)) ??
    AFFINITY_HEADERS.map(header).find((v) => v !== null) ?? null;

  const rawType = (header("x-turn-type") ?? body.turn_type ?? defaultTurnType).trim()
    .toLowerCase();
  if (rawType !== "main" && rawType !== "side") {
    throw new ProxyError(400, `X-Turn-Type is ${JSON.stringify(rawType)}; use main or side`, {
      param: "turn_type",
    });
  }
  const doneRaw = header("x-session-done") ?? body.session_done;
  const done = doneRaw != null && TRUE.has(String(doneRaw).trim().toLowerCase());

  let reward = body.reward ?? null;
  const rewardHeader = header("x-turn-reward");
  if (rewardHeader !== null) {
    reward = Number(rewardHeader);
    if (!Number.isFinite(reward)) {
      throw new ProxyError(400, `X-Turn-Reward is ${JSON.stringify(rewardHeader)}, not a number`, {
        param: "reward",
      });
    }
  }
  return { sessionId, turnType: rawType, done, reward };
}
