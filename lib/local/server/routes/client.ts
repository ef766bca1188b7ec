/**
 * Routes of client setup and sessions: client config, JWT exchange, health, capabilities,
 * creating and keeping sessions alive, telemetry.
 *
 * @module
 */

import { Hono } from "hono";
import type { LocalBackend } from "../../backend.ts";
import type { LocalAuth } from "../auth.ts";
import { readTinkerBody } from "../http.ts";
import * as wire from "../../../protocol/mod.ts";

/** What `client/config` answers: the SDK's plain transport, no JWT, ordered fwd/bwd chunks. */
export const CLIENT_CONFIG = {
  pjwt_auth_enabled: false,
  use_pyqwest_transport: false,
  proto_compress_fwdbwd: false,
  parallel_fwdbwd_chunks: false,
  create_model_via_load_weights: false,
} as const;

/** Client setup and session routes; `auth` turns on the JWT exchange. */
export function clientRoutes(backend: LocalBackend, auth?: LocalAuth): Hono {
  const api = new Hono();
  api.post("/client/config", (c) => c.json({ ...CLIENT_CONFIG, pjwt_auth_enabled: !!auth }));
  if (auth) api.post("/auth/token", async (c) => c.json({ jwt: (await auth.issue()).jwt }));
  api.post("/client/dynamic_config", (c) => c.json({ refresh_interval_sec: 300 }));
  api.get("/healthz", (c) => c.json({ status: "ok" }));
  api.get("/get_server_capabilities", (c) => c.json(backend.capabilities()));
  api.post("/create_session", async (c) => {
    const { body } = await readTinkerBody(c, wire.CreateSessionRequestSchema, "create_session");
    return c.json(backend.createSession(body));
  });
  api.post("/session_heartbeat", async (c) => {
    const { body } = await readTinkerBody(
      c,
      wire.SessionHeartbeatRequestSchema,
      "session_heartbeat",
    );
    return c.json(backend.heartbeat(body.session_id));
  });
  api.post("/telemetry", (c) => c.json({ status: "accepted" }));
  return api;
}
