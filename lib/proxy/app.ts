/**
 * The proxy's app (OpenClaw's design, on Hono): `POST /v1/chat/completions` (streamed or not),
 * OpenAI's `POST /v1/responses` and Anthropic's `POST /v1/messages` (responses.ts, messages.ts),
 * `GET /v1/models`, `GET /healthz`, and `POST /v1/sessions/{id}/done` to end a session without
 * sampling. It serves the policy from any Tinker-compatible sampler, and keeps sessions so that
 * every main turn, once its next state arrives, is handed to `onComplete` as a {@link Turn} for
 * training.
 *
 * Bad input is a 4xx with the API's error object (malformed JSON, a wrong field, a prompt over the
 * context, `n` over the limit, an oversized body, an unknown model, a wrong key); a sampler
 * failure is a 502 (a pause longer than its timeout a 503); other sessions are unaffected. A
 * streaming client that goes away before its answer is delivered loses that turn and nothing
 * else: the turn is taken back from its session.
 *
 * @module
 */

import { Hono } from "hono";
import { z } from "zod";
import { DEFAULT_MAX_BODY_BYTES, jsonErrors, readJson, sameSecret } from "../http/mod.ts";
import { completionBody } from "./completion.ts";
import { openAIErrorBody, ProxyError, requestError } from "./errors.ts";
import { DEFAULT_REWARD_BOUND, turnMeta } from "./metadata.ts";
import type { ProxyOptions, ProxyStats } from "./options.ts";
import { ChatMessagesSchema, normaliseMessages, parseChatRequest } from "./request.ts";
import { AgentSessions } from "./sessions.ts";
import { turnServer } from "./serve_turn.ts";
import { sseResponse, streamChunks } from "./stream.ts";
import { type ApiContext, jsonAnswer } from "./turn.ts";
import { mountResponses } from "./responses.ts";
import { anthropicErrors, mountMessages } from "./messages.ts";

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
    rewardsWithoutTurn: 0,
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

  const serveTurn = turnServer(o, { sessions, stats, models, served });
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
