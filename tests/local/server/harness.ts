/**
 * Raw-HTTP helpers for protocol tests of the local server: these tests check what goes over
 * the wire (status codes, ordering, dedupe, malformed bodies), so they bypass any client.
 *
 * @module
 */

import { type LocalServer, startLocalServer } from "../../../lib/local/server/mod.ts";
import type { LocalServerOptions } from "../../../lib/local/server/mod.ts";

/** A server plus small request helpers. */
export interface Harness {
  server: LocalServer;
  /** POST JSON; returns status and parsed body. */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Reply>;
  /** POST raw bytes. */
  postBytes(
    path: string,
    body: Uint8Array,
    contentType: string,
    accept?: string,
  ): Promise<Response>;
  get(path: string): Promise<Reply>;
  /** Polls retrieve_future until the result is not try_again. */
  result(handle: Reply | { request_id: string }): Promise<Record<string, unknown>>;
  /** Polls retrieve_future asking for protobuf until a protobuf result arrives; its bytes. */
  resultProto(requestId: string): Promise<Uint8Array>;
  /** A session id and a model (local/tiny, LoRA rank 4, seed 0). */
  newModel(opts?: { rank?: number; seq?: number; session?: string }): Promise<string>;
  sessionId: string;
}

/** Status and JSON body of a response. */
export interface Reply {
  status: number;
  // deno-lint-ignore no-explicit-any
  body: any;
}

/** Starts a server on a temp dir, runs `fn`, and always cleans up. */
export async function withServer(
  fn: (h: Harness) => Promise<void>,
  opts: LocalServerOptions = {},
): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-server-test-" });
  const server = await startLocalServer({ dataDir, longPollMs: 2_000, ...opts });
  const api = (p: string) => `${server.url}/api/v1/${p}`;
  const reply = async (r: Response): Promise<Reply> => {
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : null };
  };
  const h: Harness = {
    server,
    sessionId: "",
    post: async (p, body, headers = {}) =>
      reply(
        await fetch(api(p), {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: typeof body === "string" ? body : JSON.stringify(body),
        }),
      ),
    postBytes: (p, body, contentType, accept = "application/json") =>
      fetch(api(p), {
        method: "POST",
        headers: { "content-type": contentType, accept },
        body: body as Uint8Array<ArrayBuffer>,
      }),
    get: async (p) => reply(await fetch(api(p))),
    async result(handle) {
      const id = "body" in handle ? handle.body.request_id : handle.request_id;
      if (!id) throw new Error(`not a future handle: ${JSON.stringify(handle)}`);
      for (;;) {
        const r = await h.post("retrieve_future", { request_id: id });
        if (r.status !== 200) {
          throw new Error(`retrieve_future ${r.status} ${JSON.stringify(r.body)}`);
        }
        if (r.body.type !== "try_again") return r.body;
      }
    },
    async resultProto(requestId) {
      for (;;) {
        const res = await fetch(api("retrieve_future"), {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/x-protobuf" },
          body: JSON.stringify({ request_id: requestId }),
        });
        if (res.headers.get("content-type")?.includes("protobuf")) {
          return new Uint8Array(await res.arrayBuffer());
        }
        await res.body?.cancel();
      }
    },
    async newModel({ rank = 4, seq = 0, session } = {}) {
      const r = await h.post("create_model", {
        session_id: session ?? h.sessionId,
        model_seq_id: seq,
        base_model: "local/tiny",
        lora_config: { rank, seed: 0 },
      });
      const res = await h.result(r);
      if (!res.model_id) throw new Error(`create_model failed: ${JSON.stringify(res)}`);
      return res.model_id as string;
    },
  };
  try {
    h.sessionId = (await h.post("create_session", { tags: [] })).body.session_id;
    await fn(h);
  } finally {
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}

/** A next-token datum in wire JSON: inputs tokens[:-1], targets tokens[1:], unit weights. */
export function ceDatum(tokens: number[], weights?: number[]) {
  const n = tokens.length - 1;
  return {
    model_input: { chunks: [{ type: "encoded_text", tokens: tokens.slice(0, -1) }] },
    loss_fn_inputs: {
      target_tokens: { data: tokens.slice(1), dtype: "int64", shape: [n] },
      weights: { data: weights ?? Array(n).fill(1), dtype: "float32", shape: [n] },
    },
  };
}

/** A forward_backward JSON body. */
export function fwdBwd(modelId: string, seqId: number, data: unknown[], lossFn = "cross_entropy") {
  return { forward_backward_input: { data, loss_fn: lossFn }, model_id: modelId, seq_id: seqId };
}
