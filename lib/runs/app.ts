/**
 * The runs API over HTTP (Hono), as the Hermes RL tools call it at `RL_API_URL`: JSON in, JSON
 * out, 200 on success and a 4xx with `{"error": "..."}` saying what is wrong otherwise. With an
 * API key, every route but `/health` needs `Authorization: Bearer <key>`.
 *
 * @module
 */

import { Hono } from "hono";
import type { Context } from "hono";
import { browserGuard, HttpError, jsonErrors, keyAuth, readJson } from "../http/mod.ts";
import { EditConfigBodySchema, parseBody, type RunsApi, RunsError } from "./schemas.ts";

/** Options of {@link createRunsApp}. */
export interface RunsAppOptions {
  /** Require `Authorization: Bearer <apiKey>` (all routes but `/health`). */
  apiKey?: string;
  /** The interface the server binds (default 127.0.0.1): on loopback, `Host` must be too. */
  hostname?: string;
  /** Where unexpected errors are reported (default: console.error). */
  onError?: (e: unknown) => void;
}

/** The routes, for a 404's hint. */
export const ROUTES = [
  "GET /health",
  "GET /environments",
  "POST /environments/{name}/select",
  "GET /config",
  "POST /config",
  "POST /runs",
  "GET /runs",
  "GET /runs/{id}",
  "POST /runs/{id}/stop",
  "POST /runs/{id}/resume",
  "GET /runs/{id}/metrics",
  "POST /test/inference",
];

/** Builds the Hono app over any {@link RunsApi} (normally a `RunsService`). */
export function createRunsApp(api: RunsApi, o: RunsAppOptions = {}): Hono {
  const app = new Hono();
  const onError = o.onError ?? ((e) => console.error(e));

  jsonErrors(app, {
    body: (e) => e instanceof RunsError ? e.body : { error: e.message },
    internal: (e) => {
      onError(e);
      return `internal error: ${e.message.split("\n")[0]}`;
    },
  });
  app.notFound((c) =>
    c.json({ error: `no route ${c.req.method} ${c.req.path}`, routes: ROUTES }, 404)
  );
  app.use("*", browserGuard({ hostname: o.hostname ?? "127.0.0.1" }));
  if (o.apiKey) app.use("*", keyAuth({ key: o.apiKey, open: (path) => path === "/health" }));

  app.get("/health", async (c) => c.json(await api.health()));
  app.get("/environments", async (c) => c.json(await api.listEnvironments()));
  app.post(
    "/environments/:name/select",
    async (c) => c.json(await api.selectEnvironment(c.req.param("name"))),
  );
  app.get("/config", async (c) => c.json(await api.getConfig()));
  app.post("/config", async (c) => {
    const { field, value } = parseBody(EditConfigBodySchema, await objectBody(c));
    return c.json(await api.editConfig(field, value));
  });
  app.post("/runs", async (c) => c.json(await api.startRun(await objectBody(c))));
  app.get("/runs", async (c) => c.json(await api.listRuns()));
  app.get("/runs/:id", async (c) => c.json(await api.getRun(c.req.param("id"))));
  app.post("/runs/:id/stop", async (c) => c.json(await api.stopRun(c.req.param("id"))));
  app.post("/runs/:id/resume", async (c) => c.json(await api.resumeRun(c.req.param("id"))));
  app.get("/runs/:id/metrics", async (c) => c.json(await api.getResults(c.req.param("id"))));
  app.post("/test/inference", async (c) => c.json(await api.testInference(await objectBody(c))));

  return app;
}

/**
 * The request's JSON object body; no body is `{}` (the tools POST `{}` or nothing). Malformed
 * JSON or a non-object is a 400.
 */
async function objectBody(c: Context): Promise<Record<string, unknown>> {
  const body = await readJson(c.req.raw, undefined, { maxBytes: MAX_BODY_BYTES });
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new HttpError(400, "request body must be a JSON object");
  }
  return body as Record<string, unknown>;
}

/** Bodies are configs and prompts: a megabyte is plenty. */
const MAX_BODY_BYTES = 2 ** 20;
