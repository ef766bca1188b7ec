/**
 * What the three APIs of the proxy (chat completions, OpenAI Responses, Anthropic Messages)
 * share: a request read into the renderers' messages, tools and sampling settings
 * ({@link TurnRequest}), served by one core (session, prompt, sampling, commit) into a
 * {@link TurnAnswer} that each API shapes in its own wire format.
 *
 * @module
 */

import type { Hono } from "hono";
import type { Tokenizer } from "../tokenizers/types.ts";
import type { SampledChoice, Usage } from "./completion.ts";
import type { TurnMeta } from "./metadata.ts";
import type { ParsedRequest } from "./request.ts";
import type { AgentSessions } from "./sessions.ts";
import { sseResponse } from "./stream.ts";

/** A request of any API, read. */
export interface TurnRequest {
  req: Pick<ParsedRequest, "messages" | "tools" | "sampling">;
  meta: TurnMeta;
  /** The model the client asked for (undefined: the served one). */
  model: string | undefined;
  /** The id the answer will carry, when the API lets a later request name it (Responses). */
  responseId?: string;
}

/** A served request, before its answer is shaped. */
export interface TurnAnswer {
  choices: SampledChoice[];
  usage: Usage;
  sessionId: string | null;
  /** The model name the answer carries. */
  model: string;
  /** `X-Session-Id` (and, to the session's opener, `X-Session-Token`). */
  headers: Record<string, string>;
  /** The `Server-Timing` header's value, as of now. */
  timing(): string;
  /** The answer reached the client. */
  delivered(): void;
  /** The client went away first: the turn is taken back from its session. */
  lost(): void;
}

/** What an API's routes get from the proxy. */
export interface ApiContext {
  serveTurn(t: TurnRequest): Promise<TurnAnswer>;
  requestJson(raw: Request): Promise<unknown>;
  sessions: AgentSessions;
  tokenizer: Tokenizer;
  maxN: number;
  /** The session metadata of a request (headers, and the body's fields of the seed). */
  turnMeta(
    raw: Request,
    fields: { session_id?: string | null; turn_type?: string | null; reward?: number | null },
  ): TurnMeta;
}

/** Mounts an API's routes on the proxy's app. */
export type MountApi = (app: Hono, api: ApiContext) => void;

/**
 * A whole (non-streamed) answer: written at once, so a client that left is only noticed by a
 * failed write.
 */
export function jsonAnswer(env: unknown, a: TurnAnswer, body: unknown, status = 200): Response {
  const completed = (env as Deno.ServeHandlerInfo | undefined)?.completed;
  if (completed) completed.then(a.delivered, a.lost);
  else queueMicrotask(a.delivered);
  return new Response(JSON.stringify(body), {
    status,
    headers: { ...a.headers, "content-type": "application/json", "server-timing": a.timing() },
  });
}

/**
 * A turn's answer in the Responses and Messages APIs' form: the object as JSON, or, streamed,
 * its named events (`event:` lines, no `[DONE]`).
 */
export function answerOrEvents(
  env: unknown,
  a: TurnAnswer,
  body: unknown,
  events: (() => Iterable<unknown>) | null,
): Response {
  if (!events) return jsonAnswer(env, a, body);
  return sseResponse(
    events(),
    { onDone: a.delivered, onCancel: a.lost },
    { ...a.headers, "server-timing": a.timing() },
    { named: true },
  );
}
