/**
 * The HTTP face of the local backend: Tinker's REST protocol (see the wire reference), as a
 * Hono app. Each route validates its body with the protocol's zod schemas, calls the
 * {@link LocalBackend}, and encodes the answer (protobuf where SDK 0.25 expects it).
 *
 * @module
 */

import { type Context, Hono } from "hono";
import type { z } from "zod";
import { UserInputError } from "../errors.ts";
import type { LocalBackend } from "../backend.ts";
import { ExpiredFutureError } from "../runtime/futures.ts";
import { droppedConnection, type FaultInjector, faultResponse } from "./faults.ts";
import { fingerprint } from "../runtime/sequencer.ts";
import type { LocalAuth } from "./auth.ts";
import * as wire from "../../protocol/mod.ts";

/** Options of the HTTP app. */
export interface AppOptions {
  /** How long retrieve_future holds a pending request before answering try_again. */
  longPollMs: number;
  /** Fault injection, off when absent. */
  faults?: FaultInjector;
  /** Credentials with JWT exchange; absent, any key is accepted. */
  auth?: LocalAuth;
}

const PROTOBUF = "application/x-protobuf";

/** What `client/config` answers: the SDK's plain transport, no JWT, ordered fwd/bwd chunks. */
export const CLIENT_CONFIG = {
  pjwt_auth_enabled: false,
  use_pyqwest_transport: false,
  proto_compress_fwdbwd: false,
  parallel_fwdbwd_chunks: false,
  create_model_via_load_weights: false,
} as const;

/** Builds the Hono app serving the Tinker protocol over `backend`. */
export function createApp(backend: LocalBackend, opts: AppOptions): Hono {
  const app = new Hono();
  const api = new Hono();

  if (opts.faults) app.use("*", faultMiddleware(opts.faults));

  app.onError((err, c) => errorResponse(c, err));
  app.notFound((c) =>
    c.json({ detail: `no route ${c.req.method} ${new URL(c.req.url).pathname}` }, 404)
  );

  const auth = opts.auth;
  if (auth) api.use("*", auth.middleware());

  // ---- client setup and sessions ----
  api.post("/client/config", (c) => c.json({ ...CLIENT_CONFIG, pjwt_auth_enabled: !!auth }));
  if (auth) api.post("/auth/token", async (c) => c.json({ jwt: (await auth.issue()).jwt }));
  api.post("/client/dynamic_config", (c) => c.json({ refresh_interval_sec: 300 }));
  api.get("/healthz", (c) => c.json({ status: "ok" }));
  api.get("/get_server_capabilities", (c) => c.json(backend.capabilities()));
  api.post("/create_session", async (c) => {
    const { body } = await readJson(c, wire.CreateSessionRequestSchema, "create_session");
    return c.json(backend.createSession(body));
  });
  api.post("/session_heartbeat", async (c) => {
    const { body } = await readJson(c, wire.SessionHeartbeatRequestSchema, "session_heartbeat");
    return c.json(backend.heartbeat(body.session_id));
  });
  api.post("/telemetry", (c) => c.json({ status: "accepted" }));

  // ---- training ----
  api.post("/create_model", async (c) => {
    const { body } = await readJson(c, wire.CreateModelRequestSchema, "create_model");
    return handle(c, backend.createModel(body));
  });
  api.post("/get_info", async (c) => {
    const { body } = await readJson(c, wire.GetInfoRequestSchema, "get_info");
    return c.json(backend.getInfo(body.model_id));
  });
  api.post("/unload_model", async (c) => {
    const { body } = await readJson(c, wire.UnloadModelRequestSchema, "unload_model");
    return handle(c, backend.unloadModel(body.model_id));
  });
  api.post("/forward_backward", async (c) => {
    const { req, print } = await readForwardBackward(c);
    return handle(
      c,
      backend.forwardBackward(req, req.forward_only, print),
      req.model_id,
    );
  });
  api.post("/forward", async (c) => {
    const { body, print } = await readJson(c, wire.ForwardRequestSchema, "forward");
    const input = body.forward_input;
    return handle(
      c,
      backend.forwardBackward(
        {
          model_id: body.model_id,
          seq_id: body.seq_id,
          data: input.data,
          loss_fn: input.loss_fn,
          loss_fn_config: input.loss_fn_config,
        },
        true,
        print,
      ),
      body.model_id,
    );
  });
  api.post("/optim_step", async (c) => {
    const { body, print } = await readJson(c, wire.OptimStepRequestSchema, "optim_step");
    return handle(c, backend.optimStep(body, print), body.model_id);
  });
  api.post("/save_weights", async (c) => {
    const { body, print } = await readJson(c, wire.SaveWeightsRequestSchema, "save_weights");
    return handle(c, backend.saveWeights(body, print), body.model_id);
  });
  api.post("/save_weights_for_sampler", async (c) => {
    const { body, print } = await readJson(
      c,
      wire.SaveWeightsForSamplerRequestSchema,
      "save_weights_for_sampler",
    );
    return handle(c, backend.saveWeightsForSampler(body, print), body.model_id);
  });
  api.post("/load_weights", async (c) => {
    const { body, print } = await readJson(c, wire.LoadWeightsRequestSchema, "load_weights");
    return handle(c, backend.loadWeights(body, print), body.model_id ?? undefined);
  });
  api.post("/weights_info", async (c) => {
    const { body } = await readJson(c, wire.WeightsInfoRequestSchema, "weights_info");
    return c.json(await backend.weightsInfo(body.tinker_path));
  });

  // ---- sampling ----
  api.post("/create_sampling_session", async (c) => {
    const { body } = await readJson(
      c,
      wire.CreateSamplingSessionRequestSchema,
      "create_sampling_session",
    );
    return c.json(await backend.createSamplingSession(body));
  });
  api.post("/asample", async (c) => {
    const { body, print } = await readJson(c, wire.SampleRequestSchema, "asample");
    return handle(c, await backend.sample(body, print));
  });
  api.get("/samplers/:id", (c) => c.json(backend.samplerInfo(c.req.param("id"))));

  // ---- futures ----
  api.post("/retrieve_future", async (c) => {
    const { body } = await readJson(c, wire.RetrieveFutureRequestSchema, "retrieve_future");
    const state = await backend.retrieve(body.request_id, opts.longPollMs);
    if (state.status === "pending") {
      return c.json({ type: "try_again", request_id: body.request_id, queue_state: "active" });
    }
    if (state.status === "failed") return c.json({ error: state.error, category: state.category });
    return encodeResult(c, state.kind, state.value);
  });

  // ---- REST: runs, checkpoints, sessions ----
  api.get("/training_runs", async (c) => {
    const { limit, offset } = paging(c, 20);
    return c.json(await backend.trainingRuns(limit, offset));
  });
  api.get(
    "/training_runs/:run_id",
    async (c) => c.json(await backend.trainingRun(c.req.param("run_id"))),
  );
  api.get("/training_runs/:run_id/checkpoints", async (c) => {
    await backend.trainingRun(c.req.param("run_id"));
    return c.json({ checkpoints: await backend.checkpoints.list(c.req.param("run_id")) });
  });
  const ckpt = "/training_runs/:run_id/checkpoints/:kind/:name";
  const pathOf = (c: Context) =>
    backend.restPath(c.req.param("run_id")!, `${c.req.param("kind")}/${c.req.param("name")}`);
  api.delete(ckpt, async (c) => {
    await backend.checkpoints.delete(pathOf(c));
    return c.body(null, 204);
  });
  api.put(`${ckpt}/ttl`, async (c) => {
    const { body } = await readJson(c, wire.SetCheckpointTtlRequestSchema, "checkpoint ttl");
    await backend.checkpoints.setTtl(pathOf(c), body.ttl_seconds ?? null);
    return c.body(null, 204);
  });
  api.post(`${ckpt}/publish`, async (c) => {
    await backend.checkpoints.setPublic(pathOf(c), true);
    return c.body(null, 204);
  });
  api.delete(`${ckpt}/publish`, async (c) => {
    await backend.checkpoints.setPublic(pathOf(c), false);
    return c.body(null, 204);
  });
  // The archive URL answer the SDK accepts (200 with url and expiry); the URL serves the tar.
  api.get(`${ckpt}/archive`, async (c) => {
    await backend.checkpoints.meta(pathOf(c));
    const url = new URL(c.req.url);
    url.pathname = url.pathname.replace(/\/archive$/, "/archive.tar");
    url.search = "";
    const expires = new Date(Date.now() + 15 * 60_000).toISOString();
    return c.json({ url: url.toString(), expires });
  });
  api.get(`${ckpt}/archive.tar`, async (c) => {
    const tar = await backend.checkpoints.archive(pathOf(c));
    const name = `${c.req.param("name")}.tar`;
    return new Response(tar as Uint8Array<ArrayBuffer>, {
      headers: {
        "content-type": "application/x-tar",
        "content-disposition": `attachment; filename="${name}"`,
      },
    });
  });
  api.get("/checkpoints", async (c) => {
    const { limit, offset } = paging(c, 100);
    const all = await backend.checkpoints.listAll();
    return c.json({
      checkpoints: all.slice(offset, offset + limit),
      cursor: { offset, limit, total_count: all.length },
    });
  });
  api.get("/sessions", (c) => {
    const { limit, offset } = paging(c, 20);
    return c.json({ sessions: backend.listSessions().slice(offset, offset + limit) });
  });
  api.get("/sessions/:id", (c) => c.json(backend.sessionInfo(c.req.param("id"))));

  app.route("/api/v1", api);
  return app;
}

/** A future handle, as the service answers every queued operation. */
function handle(c: Context, requestId: string, modelId?: string): Response {
  return c.json(modelId ? { request_id: requestId, model_id: modelId } : { request_id: requestId });
}

async function readBytes(c: Context): Promise<Uint8Array> {
  if (c.req.header("content-encoding") && c.req.header("content-encoding") !== "identity") {
    throw new UserInputError(
      `Content-Encoding ${
        c.req.header("content-encoding")
      } is not supported; send the body uncompressed`,
      415,
    );
  }
  return new Uint8Array(await c.req.arrayBuffer());
}

/** Reads and validates a JSON body; the fingerprint identifies retries of the same request. */
async function readJson<S extends z.ZodType>(
  c: Context,
  schema: S,
  endpoint: string,
): Promise<{ body: z.infer<S>; print: string }> {
  const bytes = await readBytes(c);
  let raw: unknown;
  try {
    raw = bytes.length === 0 ? {} : JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    throw new UserInputError(`${endpoint}: body is not valid JSON (${(e as Error).message})`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new UserInputError(wire.formatZodError(endpoint, parsed.error));
  return { body: parsed.data, print: await fingerprint(bytes) };
}

/** forward_backward arrives as protobuf (SDK 0.25) or as JSON (SDK ≤ 0.24 and our JSON mode). */
async function readForwardBackward(c: Context) {
  if ((c.req.header("content-type") ?? "").includes(PROTOBUF)) {
    const bytes = await readBytes(c);
    let req: wire.ForwardBackwardProtoRequest;
    try {
      req = wire.decodeForwardBackwardRequest(bytes);
    } catch (e) {
      throw new UserInputError(`forward_backward: bad protobuf body (${(e as Error).message})`);
    }
    return { req, print: await fingerprint(bytes) };
  }
  const { body, print } = await readJson(c, wire.ForwardBackwardRequestSchema, "forward_backward");
  const input = body.forward_backward_input;
  return {
    req: {
      model_id: body.model_id,
      seq_id: body.seq_id ?? 0,
      data: input.data,
      loss_fn: input.loss_fn,
      loss_fn_config: input.loss_fn_config ?? {},
      forward_only: false,
    },
    print,
  };
}

/** Sample and forward_backward results go out as protobuf when the client accepts it. */
function encodeResult(c: Context, kind: string, value: unknown): Response {
  const wantsProto = (c.req.header("accept") ?? "").includes(PROTOBUF);
  if (wantsProto && kind === "forward_backward") {
    const bytes = wire.encodeForwardBackwardOutput(value as wire.ForwardBackwardOutput);
    return new Response(bytes as Uint8Array<ArrayBuffer>, {
      headers: { "content-type": PROTOBUF },
    });
  }
  if (wantsProto && kind === "sample") {
    const bytes = wire.encodeSampleResponse(value as wire.SampleResponse);
    return new Response(bytes as Uint8Array<ArrayBuffer>, {
      headers: { "content-type": PROTOBUF },
    });
  }
  return c.json(value as Record<string, unknown>);
}

function paging(c: Context, defaultLimit: number): { limit: number; offset: number } {
  const num = (name: string, dflt: number) => {
    const v = c.req.query(name);
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) {
      throw new UserInputError(`query parameter ${name} must be a non-negative integer, got ${v}`);
    }
    return n;
  };
  return { limit: num("limit", defaultLimit), offset: num("offset", 0) };
}

function errorResponse(c: Context, err: unknown): Response {
  if (err instanceof UserInputError) return c.json({ detail: err.message }, err.status);
  if (err instanceof wire.InvalidTinkerPathError) return c.json({ detail: err.message }, 400);
  if (err instanceof ExpiredFutureError) return c.json({ detail: err.message }, 410);
  console.error(`local backend: ${c.req.method} ${c.req.path} failed:`, err);
  return c.json({ detail: `internal error: ${(err as Error)?.message ?? String(err)}` }, 500);
}

function faultMiddleware(faults: FaultInjector) {
  return async (c: Context, next: () => Promise<void>) => {
    const d = faults.decide(new URL(c.req.url).pathname);
    if (d.delayMs > 0) await new Promise((r) => setTimeout(r, d.delayMs));
    if (d.type === "status") return faultResponse(d.status);
    if (d.type === "dropBefore") return droppedConnection();
    await next();
    if (d.type === "dropAfter") c.res = droppedConnection();
  };
}
