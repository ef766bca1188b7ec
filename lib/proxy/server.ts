/**
 * The OpenAI-compatible proxy (OpenClaw's design) as a Hono app: `POST /v1/chat/completions`
 * (streamed or not), `GET /v1/models`, `GET /healthz`, and `POST /v1/sessions/{id}/done` to end a
 * session without sampling. It serves the policy from any Tinker-compatible sampler, and keeps
 * sessions so that every main turn, once its next state arrives, is handed to `onComplete` as a
 * {@link Turn} for training.
 *
 * Bad input is a 4xx with OpenAI's error object (malformed JSON, a wrong field, a prompt over the
 * context, `n` over the limit, an oversized body, an unknown model, a wrong key); a sampler
 * failure is a 502 (a pause longer than its timeout a 503); other sessions are unaffected. A
 * streaming client that goes away before its answer is delivered loses that turn and nothing
 * else: the turn is taken back from its session.
 *
 * @module
 */

import { Hono } from "hono";
import { z } from "zod";
import {
  DEFAULT_MAX_BODY_BYTES,
  jsonErrors,
  readJson,
  sameSecret,
  serveHttp,
} from "../http/mod.ts";
import type { Message, Renderer } from "../renderers/types.ts";
import type { TurnStopReason } from "../rl/types.ts";
import {
  completionBody,
  finishReason,
  type SampledChoice,
  type Usage,
  usageOf,
} from "./completion.ts";
import { openAIErrorBody, ProxyError, requestError } from "./errors.ts";
import { renderPrompt, sampleChoices } from "./generate.ts";
import { DEFAULT_REWARD_BOUND, turnMeta, type TurnType } from "./metadata.ts";
import type { Policy } from "./policy.ts";
import { ChatMessagesSchema, normaliseMessages, parseChatRequest } from "./request.ts";
import {
  AgentSessions,
  type CompletedTurn,
  type SessionBinding,
  type SessionEnd,
  type SessionMatch,
} from "./sessions.ts";
import { sseResponse, streamChunks } from "./stream.ts";
import { type ApiContext, jsonAnswer, type TurnAnswer, type TurnRequest } from "./turn.ts";
import { mountResponses } from "./responses.ts";
import { anthropicErrors, mountMessages } from "./messages.ts";

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
}

/** The proxy's app and its state. */
export interface ProxyApp {
  app: Hono;
  sessions: AgentSessions;
  stats: ProxyStats;
  /** The model name clients use. */
  servedModelName: string;
}

/**
 * Builds the proxy's app. Call `sessions.close()` when done (it flushes pending turns).
 *
 * @example
 * const { app } = createProxyApp({ policy, renderer, modelName: "local/games", contextLength: 1024 });
 * const server = await serveHttp(app.fetch, { port: 30000, portFlag: "--proxy-port" });
 */
export function createProxyApp(o: ProxyOptions): ProxyApp {
  const served = o.servedModelName || o.modelName;
  const models = new Set([served, o.modelName]);
  const maxN = o.maxN ?? 8;
  const stats: ProxyStats = {
    requests: 0,
    mainTurns: 0,
    sideTurns: 0,
    disconnected: 0,
    errors: {},
    historyBreaks: 0,
  };
  const sessions = new AgentSessions({
    idleMs: o.sessionIdleS == null ? null : o.sessionIdleS * 1000,
    binding: o.sessionBinding ?? "token",
    maxSessions: o.maxSessions ?? null,
    lateRewardMs: (o.lateRewardS ?? 0) * 1000,
    onComplete: (t) => o.onComplete?.(t),
    onEnd: (e) => o.onSessionEnd?.(e),
  });
  const rewardBound = o.rewardBound ?? DEFAULT_REWARD_BOUND;
  const app = new Hono();

  jsonErrors(app, {
    body: (e) => {
      stats.errors[e.status] = (stats.errors[e.status] ?? 0) + 1;
      return openAIErrorBody(e);
    },
    internal: (err) => {
      console.error(`proxy: internal error: ${err.stack ?? err.message}`);
      return `internal error: ${err.message}`;
    },
  });

  app.get("/healthz", (c) => c.json({ ok: true }));

  // Before the key check, so that its 401s are in Anthropic's shape there too.
  app.use("/v1/messages", anthropicErrors);
  if (o.apiKey) {
    const key = o.apiKey;
    // OpenAI clients send a bearer; Anthropic's send X-API-Key (or a bearer).
    app.use("/v1/*", async (c, next) => {
      const bearer = /^bearer\s+(.+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
      const given = bearer ?? c.req.header("x-api-key") ?? "";
      if (!given) {
        throw new ProxyError(
          401,
          "missing API key: send Authorization: Bearer <key> or X-API-Key",
          {
            code: "invalid_api_key",
          },
        );
      }
      if (!sameSecret(given, key)) {
        throw new ProxyError(401, "invalid API key", { code: "invalid_api_key" });
      }
      await next();
    });
  }
  const maxBytes = o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const requestJson = (req: Request) => readJson(req, undefined, { maxBytes });

  app.get("/v1/models", (c) =>
    c.json({
      object: "list",
      data: [...models].map((id) => ({ id, object: "model", created: 0, owned_by: "tinkerbench" })),
    }));

  /**
   * One request of any of the three APIs, up to its answer: the model checked, the session
   * found, the prompt rendered and sampled, the main turn committed to its session. The route
   * shapes the answer, and calls `delivered` or `lost`.
   */
  const serveTurn = async (t: TurnRequest): Promise<TurnAnswer> => {
    const tArrived = performance.now();
    stats.requests++;
    if (t.model !== undefined && !models.has(t.model)) {
      throw new ProxyError(
        404,
        `The model ${JSON.stringify(t.model)} does not exist here; this proxy serves ` +
          JSON.stringify(served),
        { param: "model", code: "model_not_found" },
      );
    }
    const { req, meta } = t;
    // A main turn finds its session first: its new messages are the previous turn's next state,
    // whatever happens to this request's own sampling.
    const match: SessionMatch | null = meta.turnType === "main"
      ? sessions.begin(meta, req.messages)
      : null;
    let prompt;
    try {
      prompt = renderPrompt(o.renderer, req, {
        contextLength: o.contextLength,
        defaultMaxTokens: o.defaultMaxTokens ?? 2048,
        previous: match?.previous,
        main: match !== null,
      });
    } catch (e) {
      if (match) sessions.abandon(match);
      throw e;
    }
    // A continuation whose tokens could not continue the previous turn's is a break too.
    if (match?.previous && !prompt.bridged) sessions.noteBreak(match);
    if (match?.historyBreak) stats.historyBreaks++;
    const sessionId = match?.sessionId ?? sessions.peek(meta, req.messages);
    sessions.touch(sessionId);

    let version: number, choices: SampledChoice[], samplerMs: number;
    try {
      const acquired = await o.policy.acquire((o.pauseTimeoutS ?? 300) * 1000);
      version = acquired.version;
      const t0 = performance.now();
      choices = await sampleChoices(acquired.sampler, o.renderer, prompt, req, o.contextLength);
      samplerMs = performance.now() - t0;
    } catch (e) {
      if (match) sessions.abandon(match);
      throw e;
    }
    const usage = usageOf(prompt.tokens.length, choices);
    const first = choices[0];

    // The turn joins its session before the answer leaves, so that the client's next request
    // always finds it; if the answer is never delivered, the turn is taken back.
    const commit = match
      ? sessions.commit(match, {
        requestMessages: req.messages,
        promptMessages: prompt.messages,
        observation: match.index === 0 ? prompt.messages : match.observation,
        observationTokens: prompt.tokens,
        action: first.message,
        actionTokens: first.tokens,
        logprobs: first.logprobs,
        stopReason: first.stopReason as TurnStopReason,
        samplerVersion: version,
        responseId: t.responseId,
        spans: prompt.spans,
        historyBreak: match.historyBreak,
      }, { done: meta.done })
      : null;
    if (!match && meta.done && sessionId) sessions.end(sessionId, { reward: null });
    return {
      choices,
      usage,
      sessionId,
      model: t.model ?? served,
      headers: sessionHeaders(sessionId, match),
      timing: () =>
        `sampler;dur=${samplerMs.toFixed(2)}, proxy;dur=${
          (performance.now() - tArrived).toFixed(2)
        }`,
      delivered: () => {
        if (match) stats.mainTurns++;
        else stats.sideTurns++;
        o.onServed?.({
          time: new Date().toISOString(),
          sessionId,
          turnType: meta.turnType,
          index: match?.index ?? null,
          samplerVersion: version,
          messages: req.messages,
          choice: first,
          finishReason: finishReason(first),
          usage,
          samplerMs,
        });
      },
      lost: () => {
        stats.disconnected++;
        if (commit) sessions.retract(commit);
      },
    };
  };
  const api: ApiContext = {
    serveTurn,
    requestJson,
    sessions,
    tokenizer: o.renderer.tokenizer,
    maxN,
    turnMeta: (raw, fields) =>
      turnMeta(raw.headers, fields, o.defaultTurnType ?? "main", rewardBound),
  };

  app.post("/v1/chat/completions", async (c) => {
    const req = parseChatRequest(await requestJson(c.req.raw), { maxN });
    const meta = turnMeta(c.req.raw.headers, req.body, o.defaultTurnType ?? "main", rewardBound);
    const a = await serveTurn({ req, meta, model: req.body.model });
    const id = `chatcmpl-${crypto.randomUUID().replaceAll("-", "")}`;
    const created = Math.floor(Date.now() / 1000);
    if (req.stream) {
      const chunks = streamChunks({ id, created, model: a.model }, a.choices, {
        tokenizer: o.renderer.tokenizer,
        logprobs: req.sampling.logprobs,
        usage: req.includeUsage ? a.usage : null,
      });
      return sseResponse(chunks, { onDone: a.delivered, onCancel: a.lost }, {
        ...a.headers,
        "server-timing": a.timing(),
      });
    }
    return jsonAnswer(
      c.env,
      a,
      completionBody({
        id,
        created,
        model: a.model,
        choices: a.choices,
        usage: a.usage,
        logprobs: req.sampling.logprobs,
        tokenizer: o.renderer.tokenizer,
      }),
    );
  });

  mountResponses(app, api);
  mountMessages(app, api);

  app.post("/v1/sessions/:id/done", async (c) => {
    const id = c.req.param("id");
    const parsed = SessionDoneSchema.safeParse(await requestJson(c.req.raw));
    if (!parsed.success) throw requestError(parsed.error);
    const meta = turnMeta(c.req.raw.headers, { reward: parsed.data.reward }, "main", rewardBound);
    if (meta.token === null) {
      throw new ProxyError(
        401,
        "ending a session needs its X-Session-Token (the proxy gave it with the session's first answer)",
        { param: "X-Session-Token", code: "session_token_required" },
      );
    }
    const ended = sessions.done(id, meta.token, {
      messages: parsed.data.messages ? normaliseMessages(parsed.data.messages) : undefined,
      reward: meta.reward,
    });
    if (!ended) {
      // The same answer for an unknown id and a foreign one: ids cannot be probed.
      throw new ProxyError(404, "no open session with this id and X-Session-Token", {
        code: "session_not_found",
      });
    }
    return c.json({ ok: true, session_id: id });
  });

  return { app, sessions, stats, servedModelName: served };
}

const SessionDoneSchema = z.object({
  /** The conversation as the client would send it next: its new part is the next state. */
  messages: ChatMessagesSchema.optional(),
  reward: z.number().refine(Number.isFinite, "reward must be finite").nullish(),
});

/**
 * The session headers of an answer: its id, and to the request that opened the session its
 * token (the one secret that continues it; requests that joined otherwise never see it).
 */
export function sessionHeaders(
  sessionId: string | null,
  match: SessionMatch | null,
): Record<string, string> {
  const h: Record<string, string> = sessionId ? { "x-session-id": sessionId } : {};
  if (match?.token) h["x-session-token"] = match.token;
  return h;
}

/** A running proxy. */
export interface RunningProxy extends ProxyApp {
  /** Base URL of the OpenAI API for a local client, e.g. `http://127.0.0.1:30000/v1`. */
  url: string;
  /** Where it listens, e.g. `0.0.0.0:30000`. */
  address: string;
  port: number;
  /**
   * Answers the requests in flight (new ones get a 503 `proxy_stopping` meanwhile), then stops
   * listening and ends every session (pending turns complete without a next state).
   */
  close(): Promise<void>;
}

/**
 * Starts the proxy on `hostname:port` (port 0: a free one). A taken port is a
 * `PortInUseError` naming `portFlag` (default `--proxy-port`).
 *
 * @example
 * const proxy = await startProxy({ policy, renderer, modelName: "local/games",
 *   contextLength: 1024, hostname: "127.0.0.1", port: 0 });
 * const client = new OpenAI({ baseURL: proxy.url, apiKey: "none" });
 */
export async function startProxy(
  o: ProxyOptions & { hostname?: string; port?: number; portFlag?: string },
): Promise<RunningProxy> {
  const proxy = createProxyApp(o);
  // Requests being answered: closing waits for them (a run at --max-steps answers what its
  // agents asked before it stops), and answers new ones with a 503 meanwhile.
  const inFlight = new Set<Promise<void>>();
  let stopping = false;
  const handler = (req: Request, info: Deno.ServeHandlerInfo) => {
    if (stopping) {
      const e = new ProxyError(503, "the proxy is stopping (its training run has ended)", {
        code: "proxy_stopping",
      });
      const anthropic = new URL(req.url).pathname.startsWith("/v1/messages");
      return Response.json(
        anthropic
          ? { type: "error", error: { type: "overloaded_error", message: e.message } }
          : e.body(),
        { status: 503 },
      );
    }
    const done = info.completed.then(() => {}, () => {});
    inFlight.add(done);
    done.then(() => inFlight.delete(done));
    return proxy.app.fetch(req, info);
  };
  const server = await serveHttp(handler, {
    hostname: o.hostname ?? "0.0.0.0",
    port: o.port ?? 30000,
    portFlag: o.portFlag ?? "--proxy-port",
    owned: proxy.sessions,
  });
  return {
    ...proxy,
    url: `${server.url}/v1`,
    address: server.address,
    port: server.port,
    async close() {
      stopping = true;
      while (inFlight.size) await Promise.all([...inFlight]);
      await server.close();
    },
  };
}
