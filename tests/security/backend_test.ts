/**
 * Attacks on the local backend (`deno task serve`): numbers out of range and oversized bodies.
 */

import { assert } from "../assert.ts";
import { encodeForwardBackwardRequest } from "../../lib/protocol/mod.ts";
import { postJson, type Reply, send, withProcess } from "./harness.ts";

async function withBackend(fn: (api: (p: string) => string) => Promise<void>, args: string[] = []) {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-sec-backend-" });
  await withProcess(
    "serve",
    ["--port", "0", "--data-dir", dataDir, "--long-poll-ms", "2000", ...args],
    (p) => fn((path) => `${p.listening}/api/v1/${path}`),
    { dirs: [dataDir] },
  );
}

async function result(api: (p: string) => string, handle: Reply): Promise<Record<string, unknown>> {
  assert.equal(handle.status, 200, JSON.stringify(handle.body));
  for (;;) {
    const r = await postJson(api("retrieve_future"), { request_id: handle.body.request_id });
    if (r.body.type !== "try_again") return r.body;
  }
}

/** A LoRA model of local/tiny on the backend: attacks aim at a real model, not a missing one. */
async function createModel(api: (p: string) => string): Promise<string> {
  const session = (await postJson(api("create_session"), { tags: [] })).body.session_id;
  const created = await result(
    api,
    await postJson(api("create_model"), {
      session_id: session,
      model_seq_id: 0,
      base_model: "local/tiny",
      lora_config: { rank: 4, seed: 0 },
    }),
  );
  return created.model_id as string;
}

function datum(weight: number) {
  const tokens = [97, 98, 99, 100, 101, 102];
  return {
    model_input: { chunks: [{ type: "encoded_text", tokens: tokens.slice(0, -1) }] },
    loss_fn_inputs: {
      target_tokens: { data: tokens.slice(1), dtype: "int64", shape: [5] },
      weights: { data: Array(5).fill(weight), dtype: "float32", shape: [5] },
    },
  };
}

Deno.test("security/backend: a loss weight of 1e30 makes optim_step an error, never a null gradient norm, and leaves the model intact", async () => {
  await withBackend(async (api) => {
    const model = await createModel(api);
    const step = async (seq: number, weight: number) => {
      const fb = await result(
        api,
        await postJson(api("forward_backward"), {
          forward_backward_input: { data: [datum(weight)], loss_fn: "cross_entropy" },
          model_id: model,
          seq_id: seq,
        }),
      );
      const opt = await result(
        api,
        await postJson(api("optim_step"), {
          adam_params: { learning_rate: 1e-3 },
          model_id: model,
          seq_id: seq + 1,
        }),
      );
      return { fb, opt };
    };
    const bad = await step(1, 1e30);
    const text = JSON.stringify(bad);
    assert.ok(!/"grad_norm:mean":null/.test(text), `a null gradient norm: ${text}`);
    const failed = [bad.fb, bad.opt].find((r) => typeof r.error === "string");
    assert.ok(failed, `neither call failed: ${text}`);
    assert.match(String(failed.error), /overflowed float32/);
    const good = await step(3, 1);
    const metrics = good.opt.metrics as Record<string, number>;
    assert.ok(Number.isFinite(metrics["grad_norm:mean"]), JSON.stringify(good));
    const losses = good.fb.metrics as Record<string, number>;
    assert.ok(
      Number.isFinite(losses["loss:sum"]),
      `the model was not poisoned: ${JSON.stringify(good)}`,
    );
  });
});

/** A protobuf forward_backward of one datum for `model`, with `weights`. */
function protobufStep(model: string, weights: Float32Array) {
  const d = datum(1);
  return encodeForwardBackwardRequest({
    model_id: model,
    seq_id: 1,
    loss_fn: "cross_entropy",
    loss_fn_config: {},
    forward_only: false,
    data: [{
      model_input: d.model_input as never,
      loss_fn_inputs: {
        target_tokens: d.loss_fn_inputs.target_tokens as never,
        weights: { data: weights as never, dtype: "float32", shape: [5] },
      },
    }],
  });
}

async function sendProtobuf(api: (p: string) => string, bytes: Uint8Array): Promise<Reply> {
  return await send(api("forward_backward"), {
    method: "POST",
    headers: { "content-type": "application/x-protobuf" },
    body: bytes as Uint8Array<ArrayBuffer>,
  });
}

// Two guards of defenses older than the hardening (docs/security.md): the learner's
// validation refused a NaN in a datum, and the schemas' numbers refuse JSON's Infinity
// (`1e999`). They check the refusal and the field named, not the message's wording.
Deno.test("security/backend: a NaN in a protobuf forward_backward's weights is a 400 naming the field", async () => {
  await withBackend(async (api) => {
    const model = await createModel(api);
    const weights = new Float32Array(5).fill(1);
    weights[3] = NaN;
    const r = await sendProtobuf(api, protobufStep(model, weights));
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.match(r.body.detail, /weights(\.data)?\[3\] is NaN/);
  });
});

Deno.test("security/backend: Infinity in a JSON optim_step is a 400 naming the field", async () => {
  await withBackend(async (api) => {
    const model = await createModel(api);
    const r = await postJson(
      api("optim_step"),
      `{"model_id":${JSON.stringify(model)},"seq_id":1,"adam_params":{"learning_rate":1e999}}`,
    );
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.match(r.body.detail, /learning_rate/);
  });
});

Deno.test("security/backend: a body over 64 MiB is a 413", async () => {
  await withBackend(async (api) => {
    const big = new Uint8Array(65 * 2 ** 20).fill(32);
    const r = await send(api("forward_backward"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: big,
    });
    assert.equal(r.status, 413, JSON.stringify(r.body));
    assert.match(r.body.detail, /over 67108864 bytes/);
  });
});
