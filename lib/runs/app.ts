/**
 * The runs API over HTTP (Hono), as the Hermes RL tools call it at `RL_API_URL`: JSON in, JSON
 * out, 200 on success and a 4xx with `{"error": "..."}` saying what is wrong otherwise. With an
 * API key, every route but `/health` needs `Authorization: Bearer <key>`.
 *
 * @module
 */

import { Hono } from "hono";
import type { Context } from "hono";
import { EditConfigBodySchema, parseBody, type RunsApi, RunsError } from "./schemas.ts";

/** Options of {@link createRunsApp}. */
export interface RunsAppOptions {
  /** Require `Authorization: Bearer <apiKey>` (all routes but `/health`). */
  apiKey?: string;
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

  if (o.apiKey) {
    const expected = `Bearer ${o.apiKey}`;
    app.use("*", async (c, next) => {
      if (c.req.path === "/health" || sameText(c.req.header("authorization") ?? "", expected)) {
        return await next();
      }
      return c.json({ error: "missing or wrong API key: send Authorization: Bearer <key>" }, 401);
    });
  }

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

  app.notFound((c) =>
    c.json({ error: `no route ${c.req.method} ${c.req.path}`, routes: ROUTES }, 404)
  );
  app.onError((e, c) => {
    if (e instanceof RunsError) {
      return c.json(e.body, e.status as 400 | 401 | 403 | 404 | 409);
    }
    onError(e);
    return c.json({ error: `internal error: ${(e as Error).message.split("\n")[0]}` }, 500);
  });
  return app;
}

/**
 * The request's JSON object body; no body is `{}` (the tools POST `{}` or nothing). Malformed
 * JSON or a non-object is a 400.
 */
async function objectBody(c: Context): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  if (text.trim() === "") return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (e) {
    throw new RunsError(400, { error: `request body is not valid JSON: ${(e as Error).message}` });
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new RunsError(400, { error: "request body must be a JSON object" });
  }
  return body as Record<string, unknown>;
}

/** Compares two strings in time independent of where they differ. */
function sameText(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a), y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}
