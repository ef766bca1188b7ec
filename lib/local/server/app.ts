/**
 * The HTTP face of the local backend: Tinker's REST protocol (see the wire reference), as a
 * Hono app composed of one route group per concern (`routes/`). Each route validates its body
 * with the protocol's zod schemas, calls the {@link LocalBackend}, and encodes the answer
 * (protobuf where SDK 0.25 expects it). This file adds what applies to every route: fault
 * injection, credentials, and errors as `{"detail": …}` with their status.
 *
 * @module
 */

import { type Context, Hono } from "hono";
import { HttpError, jsonErrors } from "../../http/mod.ts";
import type { LocalBackend } from "../backend.ts";
import { ExpiredFutureError } from "../runtime/futures.ts";
import { recordFailure } from "../runtime/failures.ts";
import { droppedConnection, type FaultInjector, faultResponse } from "./faults.ts";
import type { LocalAuth } from "./auth.ts";
import { clientRoutes } from "./routes/client.ts";
import { trainingRoutes } from "./routes/training.ts";
import { samplingRoutes } from "./routes/sampling.ts";
import { futureRoutes } from "./routes/futures.ts";
import { restRoutes } from "./routes/rest.ts";
import { InvalidTinkerPathError } from "../../protocol/mod.ts";

export { CLIENT_CONFIG } from "./routes/client.ts";

/** Options of the HTTP app. */
export interface AppOptions {
  /** How long retrieve_future holds a pending request before answering try_again. */
  longPollMs: number;
  /** Fault injection, off when absent. */
  faults?: FaultInjector;
  /** Credentials with JWT exchange; absent, any key is accepted. */
  auth?: LocalAuth;
}

/** Builds the Hono app serving the Tinker protocol over `backend`, under `/api/v1`. */
export function createApp(backend: LocalBackend, opts: AppOptions): Hono {
  const app = new Hono();
  // Computation waits for the traffic to go quiet (runtime/compute_queue.ts).
  app.use("*", async (_c, next) => {
    backend.queue.noteTraffic();
    await next();
    backend.queue.noteTraffic();
  });
  if (opts.faults) app.use("*", faultMiddleware(opts.faults));
  jsonErrors(app, {
    body: (e) => ({ detail: e.message }),
    classify: (err) =>
      err instanceof InvalidTinkerPathError
        ? new HttpError(400, err.message)
        : err instanceof ExpiredFutureError
        ? new HttpError(410, err.message)
        : undefined,
    internal: (err, c) => recordFailure(backend.failureLog, err, `${c.req.method} ${c.req.path}`),
  });

  const api = new Hono();
  if (opts.auth) api.use("*", opts.auth.middleware());
  api.route("/", clientRoutes(backend, opts.auth));
  api.route("/", trainingRoutes(backend));
  api.route("/", samplingRoutes(backend));
  api.route("/", futureRoutes(backend, opts.longPollMs));
  api.route("/", restRoutes(backend));
  app.route("/api/v1", api);
  return app;
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
