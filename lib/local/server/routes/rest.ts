/**
 * The REST routes: training runs, their checkpoints (listing, deleting, TTL, publishing,
 * archive download) and sessions.
 *
 * @module
 */

import { type Context, Hono } from "hono";
import type { LocalBackend } from "../../backend.ts";
import { paging, readTinkerBody } from "../http.ts";
import * as wire from "../../../protocol/mod.ts";

/** REST routes over `backend`. */
export function restRoutes(backend: LocalBackend): Hono {
  const api = new Hono();
  api.get("/training_runs", async (c) => {
    const { limit, offset } = paging(c, 20);
    return c.json(await backend.trainingRuns(limit, offset));
  });
  api.get(
    "/training_runs/:run_id",
    async (c) => c.json(await backend.trainingRun(c.req.param("run_id"))),
  );
  api.get(
    "/training_runs/:run_id/checkpoints",
    async (c) => c.json(await backend.runCheckpoints(c.req.param("run_id"))),
  );
  const ckpt = "/training_runs/:run_id/checkpoints/:kind/:name";
  const pathOf = (c: Context) =>
    backend.restPath(c.req.param("run_id")!, `${c.req.param("kind")}/${c.req.param("name")}`);
  api.delete(ckpt, async (c) => {
    await backend.checkpoints.delete(pathOf(c));
    return c.body(null, 204);
  });
  api.put(`${ckpt}/ttl`, async (c) => {
    const { body } = await readTinkerBody(c, wire.SetCheckpointTtlRequestSchema, "checkpoint ttl");
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
    return c.json(await backend.allCheckpoints(limit, offset));
  });
  api.get("/sessions", (c) => {
    const { limit, offset } = paging(c, 20);
    return c.json({ sessions: backend.listSessions().slice(offset, offset + limit) });
  });
  api.get("/sessions/:id", (c) => c.json(backend.sessionInfo(c.req.param("id"))));
  return api;
}
