/**
 * The session metadata of a request, as the OpenClaw seed reads it, plus what agents send: the
 * session's token from `X-Session-Token` (the proxy gave it with the session's first answer);
 * the client's own name for its session (a label, never a credential) from `X-Session-Id`, the
 * body's `session_id`, OpenClaw's affinity headers (`session_id`, `x-session-affinity`), Codex's
 * `session-id` or Claude Code's `x-claude-code-session-id`; the turn type from `X-Turn-Type` or `turn_type`
 * (default configurable, `main` as in the seed's later version); the end of a session from
 * `X-Session-Done` or `session_done`; and a reward for the session's previous main turn from
 * `X-Turn-Reward` or the body's `reward`, finite and within `±rewardBound`.
 *
 * @module
 */

import { ProxyError } from "./errors.ts";
import type { ChatCompletionRequest } from "./request.ts";

/** Main turns are trained; side turns (heartbeats, memory upkeep) are served only. */
export type TurnType = "main" | "side";

/** A request's session metadata. */
export interface TurnMeta {
  /** `X-Session-Token`: the secret of the session the request continues. */
  token: string | null;
  /** The client's own name for its session; null: none given. */
  label: string | null;
  turnType: TurnType;
  /** The session ends with this request (its last turn is flushed without a next state). */
  done: boolean;
  /** The reward of the session's previous main turn, when the client has one. */
  reward: number | null;
}

/** Headers that carry a session id, in order of precedence after `X-Session-Id`. */
const AFFINITY_HEADERS = [
  "session_id",
  "x-session-affinity",
  "session-id",
  "x-claude-code-session-id",
] as const;

/** The largest reward magnitude a client may send unless the proxy is told otherwise. */
export const DEFAULT_REWARD_BOUND = 100;

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
  rewardBound: number = DEFAULT_REWARD_BOUND,
): TurnMeta {
  const header = (name: string) => {
    const v = headers.get(name)?.trim();
    return v ? v : null;
  };
  const token = header("x-session-token");
  const label = header("x-session-id") ??
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

  const rewardHeader = header("x-turn-reward");
  const reward = rewardHeader !== null
    ? checkedReward(rewardHeader, Number(rewardHeader), "X-Turn-Reward", rewardBound)
    : body.reward == null
    ? null
    : checkedReward(body.reward, body.reward, "reward", rewardBound);
  return { token, label, turnType: rawType, done, reward };
}

/**
 * A reward as a client sent it, if finite and within `±bound` (a reward of 1e308 would make an
 * advantage of Infinity and fail the run); a 400 naming the field otherwise.
 */
export function checkedReward(
  raw: unknown,
  value: number,
  field: string,
  bound: number,
): number {
  if (typeof raw === "string" && raw.trim() === "" || !Number.isFinite(value)) {
    throw new ProxyError(400, `${field} is ${JSON.stringify(raw)}, not a finite number`, {
      param: "reward",
      code: "invalid_reward",
    });
  }
  if (Math.abs(value) > bound) {
    throw new ProxyError(
      400,
      `${field} is ${value}, outside [-${bound}, ${bound}] (proxy.reward_bound)`,
      { param: "reward", code: "invalid_reward" },
    );
  }
  return value;
}
