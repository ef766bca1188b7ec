/**
 * Errors of the proxy, answered as OpenAI's error object
 * (`{"error": {"message", "type", "param", "code"}}`), so OpenAI clients raise them with the
 * status and message intact. Every bad input is one of these, never a crash.
 *
 * @module
 */

import type { z } from "zod";
import { HttpError } from "../http/errors.ts";

/** OpenAI's error object. */
export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** HTTP statuses the proxy answers errors with. */
export type ProxyErrorStatus = 400 | 401 | 404 | 413 | 415 | 429 | 500 | 502 | 503;

/**
 * A request the proxy refuses or cannot serve: its status, OpenAI's `type` (derived from the
 * status when not given), the request field at fault (`param`) and a machine-readable `code`.
 *
 * @example
 * throw new ProxyError(400, "n is 9, at most 8", { param: "n" });
 */
export class ProxyError extends HttpError {
  override name = "ProxyError";
  override readonly status: ProxyErrorStatus;
  readonly type: string;
  readonly param: string | null;
  readonly code: string | null;
  /** Seconds a client should wait before retrying (503s). */
  readonly retryAfterS?: number;

  constructor(
    status: ProxyErrorStatus,
    message: string,
    o: { type?: string; param?: string | null; code?: string | null; retryAfterS?: number } = {},
  ) {
    super(status, message, o.retryAfterS ? { "retry-after": String(o.retryAfterS) } : {});
    this.status = status;
    this.type = o.type ?? defaultType(status);
    this.param = o.param ?? null;
    this.code = o.code ?? null;
    this.retryAfterS = o.retryAfterS;
  }

  /** The response body. */
  body(): OpenAIErrorBody {
    return {
      error: { message: this.message, type: this.type, param: this.param, code: this.code },
    };
  }
}

/** Any error answer in OpenAI's shape (a {@link ProxyError} keeps its type, param and code). */
export function openAIErrorBody(e: HttpError): OpenAIErrorBody {
  if (e instanceof ProxyError) return e.body();
  const code = e.status === 413 ? "request_too_large" : e.status === 404 ? "not_found" : null;
  return { error: { message: e.message, type: defaultType(e.status), param: null, code } };
}

function defaultType(status: number): string {
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

/**
 * The first issue of a failed request parse as a 400 naming the field in OpenAI's style
 * (`messages[0].role`).
 */
export function requestError(error: z.ZodError): ProxyError {
  const issue = error.issues[0];
  const param = issueParam(issue.path);
  const where = param ? `${param}: ` : "";
  return new ProxyError(400, `${where}${issue.message}`, { param });
}

/**
 * A failed parse of a strict body (the Responses and Messages APIs) as a 400: an unknown field
 * is named as one this proxy does not support, anything else as {@link requestError}.
 */
export function strictRequestError(error: z.ZodError): ProxyError {
  const issue = error.issues[0];
  if (issue.code === "unrecognized_keys") {
    const key = [...issue.path.map(String), issue.keys[0]].join(".");
    return new ProxyError(400, `${key}: this proxy does not support this field`, {
      param: key,
      code: "unsupported_parameter",
    });
  }
  return requestError(error);
}

function issueParam(path: PropertyKey[]): string | null {
  if (path.length === 0) return null;
  return path.map((p, i) => typeof p === "number" ? `[${p}]` : `${i ? "." : ""}${String(p)}`)
    .join("");
}

/** A request's `X-Session-Token` names no open session: a 404. */
export function sessionNotFound(): ProxyError {
  return new ProxyError(
    404,
    "X-Session-Token names no open session (it ended, or the proxy restarted); send the " +
      "request without it to open a new session",
    { param: "X-Session-Token", code: "session_not_found" },
  );
}

/**
 * A reward on a request that opens a session under `token` binding (there is no turn to
 * reward): a 400.
 */
export function noSessionToReward(): ProxyError {
  return new ProxyError(
    400,
    "X-Turn-Reward rewards the session's previous turn, but this request opens a new " +
      "session: send back the X-Session-Token header of the session's first answer " +
      "(or set proxy.session_binding: history for agents that cannot)",
    { param: "reward", code: "no_session_to_reward" },
  );
}

/** A request would open a session beyond `proxy.max_sessions` (`n` are open): a 429. */
export function sessionsFull(n: number): ProxyError {
  return new ProxyError(
    429,
    `the proxy has ${n} open session${n === 1 ? "" : "s"}, its limit (proxy.max_sessions, ` +
      "--max-sessions): end one (X-Session-Done, POST /v1/sessions/{id}/done), let one go " +
      "idle (proxy.session_idle_s), or raise the limit",
    { type: "requests", code: "rate_limit_exceeded" },
  );
}
