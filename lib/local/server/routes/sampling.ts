/**
 * Routes of sampling: opening sampling sessions, sampling, describing a sampler.
 *
 * @module
 */

import { Hono } from "hono";
import type { LocalBackend } from "../../backend.ts";
import { handle, readTinkerBody } from "../http.ts";
import * as wire from "../../../protocol/mod.ts";

/** Sampling routes over `backend`. */
export function samplingRoutes(backend: LocalBackend): Hono {
  const api = new Hono();
  api.post("/create_sampling_session", async (c) => {
    const { body } = await readTinkerBody(
      c,
      wire.CreateSamplingSessionRequestSchema,
      "create_sampling_session",
    );
    return c.json(await backend.createSamplingSession(body));
  });
  api.post("/asample", async (c) => {
    const { body, print } = await readTinkerBody(c, wire.SampleRequestSchema, "asample");
    return handle(c, await backend.sample(body, print));
  });
  api.get("/samplers/:id", (c) => c.json(backend.samplerInfo(c.req.param("id"))));
  return api;
}
