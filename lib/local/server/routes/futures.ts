/**
 * The futures route: `retrieve_future` long-polls a request and answers its result, as JSON or
 * as protobuf when the client accepts it.
 *
 * @module
 */

import { type Context, Hono } from "hono";
import type { LocalBackend } from "../../backend.ts";
import { PROTOBUF, readTinkerBody } from "../http.ts";
import * as wire from "../../../protocol/mod.ts";

/** The retrieve_future route; a pending request is held up to `longPollMs`, then try_again. */
export function futureRoutes(backend: LocalBackend, longPollMs: number): Hono {
  const api = new Hono();
  api.post("/retrieve_future", async (c) => {
    const { body } = await readTinkerBody(c, wire.RetrieveFutureRequestSchema, "retrieve_future");
    const state = await backend.retrieve(body.request_id, longPollMs);
    if (state.status === "pending") {
      return c.json({ type: "try_again", request_id: body.request_id, queue_state: "active" });
    }
    if (state.status === "failed") return c.json({ error: state.error, category: state.category });
    return encodeResult(c, state.kind, state.value);
  });
  return api;
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
