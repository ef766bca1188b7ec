import { assert, assertClose } from "../../assert.ts";
import { ceDatum, fwdBwd, withServer } from "./harness.ts";
import { defaultPrefixCacheBytes, LOCAL_BACKEND_DEFAULTS } from "../../../lib/local/backend.ts";
import {
  decodeForwardBackwardOutput,
  decodeSampleResponse,
  encodeForwardBackwardRequest,
} from "../../../lib/protocol/mod.ts";

const SEQ = [3, 14, 15, 92, 65, 35, 89, 79, 32, 38];

Deno.test("server: client/config, capabilities and health", async () => {
  await withServer(async (h) => {
    const cfg = await h.post("client/config", { sdk_version: "0.25.0" });
    assert.equal(cfg.body.pjwt_auth_enabled, false);
    assert.equal(cfg.body.use_pyqwest_transport, false);
    const caps = await h.get("get_server_capabilities");
    const names = caps.body.supported_models.map((m: { model_name: string }) => m.model_name);
    assert.deepEqual(names, [
      "local/tiny",
      "local/small",
      "local/bench",
      "local/games",
      "local/games2",
      "local/hint",
      "local/tools",
      "local/long",
    ]);
    assert.equal((await h.get("healthz")).body.status, "ok");
    assert.equal((await h.post("telemetry", { events: [] })).body.status, "accepted");
  });
});

Deno.test("server: bad requests are 4xx with messages that say what is wrong", async () => {
  await withServer(async (h) => {
    const unknownModel = await h.post("create_model", {
      session_id: h.sessionId,
      model_seq_id: 0,
      base_model: "Qwen/Qwen3-8B",
    });
    assert.equal(unknownModel.status, 400);
    assert.match(
      unknownModel.body.detail,
      /does not serve "Qwen\/Qwen3-8B".*local\/tiny.*TINKER_API_KEY/,
    );

    const malformed = await h.post("create_session", "{not json");
    assert.equal(malformed.status, 400);
    assert.match(malformed.body.detail, /not valid JSON/);

    const missing = await h.post("create_model", { session_id: h.sessionId, model_seq_id: 0 });
    assert.equal(missing.status, 400);
    assert.match(missing.body.detail, /^create_model: base_model:/);

    const noSession = await h.post("create_model", {
      session_id: "nope",
      model_seq_id: 0,
      base_model: "local/tiny",
    });
    assert.equal(noSession.status, 404);

    const modelId = await h.newModel();
    const cases: Array<[string, unknown, RegExp]> = [
      [
        "wrong tensor length",
        fwdBwd(modelId, 1, [{
          ...ceDatum(SEQ),
          loss_fn_inputs: {
            ...ceDatum(SEQ).loss_fn_inputs,
            weights: { data: [1, 1], dtype: "float32", shape: [2] },
          },
        }]),
        /data\[0\].*weights/,
      ],
      ["token out of vocab", fwdBwd(modelId, 1, [ceDatum([1, 2, 99999, 4])]), /vocab|range/i],
      ["unknown loss_fn", fwdBwd(modelId, 1, [ceDatum(SEQ)], "kl_magic"), /kl_magic/],
      [
        "unknown loss_fn_config key",
        {
          forward_backward_input: {
            data: [ceDatum(SEQ)],
            loss_fn: "ppo",
            loss_fn_config: { clip_lo: 0.9 },
          },
          model_id: modelId,
          seq_id: 1,
        },
        /clip_lo/,
      ],
      [
        "unknown loss_fn_inputs key",
        fwdBwd(modelId, 1, [{
          ...ceDatum(SEQ),
          loss_fn_inputs: { ...ceDatum(SEQ).loss_fn_inputs, mask: { data: [1], dtype: "float32" } },
        }]),
        /mask/,
      ],
      [
        "wrong dtype",
        fwdBwd(modelId, 1, [{
          ...ceDatum(SEQ),
          loss_fn_inputs: { target_tokens: { data: [1], dtype: "float64" } },
        }]),
        /dtype/,
      ],
    ];
    for (const [what, body, pattern] of cases) {
      const r = await h.post("forward_backward", body);
      assert.equal(r.status, 400, `${what}: status ${r.status} ${JSON.stringify(r.body)}`);
      assert.match(r.body.detail, pattern, what);
    }

    const badPath = await h.post("weights_info", { tinker_path: "tinker://run/models/x" });
    assert.equal(badPath.status, 400);
    assert.match(badPath.body.detail, /invalid checkpoint kind/);
    const noCkpt = await h.post("weights_info", { tinker_path: "tinker://run/weights/x" });
    assert.equal(noCkpt.status, 404);

    const tooLong = await h.post("asample", {
      base_model: "local/tiny",
      prompt: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
      sampling_params: { max_tokens: 100_000 },
    });
    assert.equal(tooLong.status, 400);
    assert.match(tooLong.body.detail, /256/);
    assert.equal((await h.post("retrieve_future", { request_id: "12345" })).status, 404);
  });
});

Deno.test("server: a model's operations run in seq_id order, not arrival order", async () => {
  await withServer(async (h) => {
    const modelId = await h.newModel();
    const before = await h.result(
      await h.post("forward", {
        forward_input: { data: [ceDatum(SEQ)], loss_fn: "cross_entropy" },
        model_id: modelId,
        seq_id: 1,
      }),
    );
    // seq 4 (a forward) arrives first, then 3 (optim), then 2 (forward_backward).
    const fwd = await h.post("forward", {
      forward_input: { data: [ceDatum(SEQ)], loss_fn: "cross_entropy" },
      model_id: modelId,
      seq_id: 4,
    });
    const opt = await h.post("optim_step", {
      adam_params: { learning_rate: 0.05 },
      model_id: modelId,
      seq_id: 3,
    });
    const fb = await h.post("forward_backward", fwdBwd(modelId, 2, [ceDatum(SEQ)]));
    const after = await h.result(fwd);
    await h.result(opt);
    await h.result(fb);
    const lp0 = (before.loss_fn_outputs as { logprobs: { data: number[] } }[])[0].logprobs.data;
    const lp1 = (after.loss_fn_outputs as { logprobs: { data: number[] } }[])[0].logprobs.data;
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    assert.ok(
      sum(lp1) > sum(lp0) + 0.1,
      `the forward at seq 4 saw the update: ${sum(lp0)} -> ${sum(lp1)}`,
    );
  });
});

Deno.test("server: retries dedupe on (model, seq_id); a different body is a 409", async () => {
  await withServer(async (h) => {
    const modelId = await h.newModel();
    const body = fwdBwd(modelId, 1, [ceDatum(SEQ)]);
    const a = await h.post("forward_backward", body);
    const b = await h.post("forward_backward", body);
    assert.equal(a.body.request_id, b.body.request_id);
    const c = await h.post("forward_backward", fwdBwd(modelId, 1, [ceDatum(SEQ.slice(2))]));
    assert.equal(c.status, 409);
    await h.result(a);
    // The retried optim_step is applied once: the result of a second submit is the same future.
    const s1 = await h.post("optim_step", { adam_params: {}, model_id: modelId, seq_id: 2 });
    const s2 = await h.post("optim_step", { adam_params: {}, model_id: modelId, seq_id: 2 });
    assert.equal(s1.body.request_id, s2.body.request_id);
  });
});

Deno.test("server: protobuf forward_backward in, protobuf results out, equal to JSON", async () => {
  await withServer(async (h) => {
    const modelId = await h.newModel();
    const data = [ceDatum(SEQ), ceDatum(SEQ.slice(0, 6), [1, 0.5, -1, 0, 2])];
    const viaJson = await h.result(
      await h.post("forward", {
        forward_input: { data, loss_fn: "cross_entropy" },
        model_id: modelId,
        seq_id: 1,
      }),
    );
    const bytes = encodeForwardBackwardRequest({
      model_id: modelId,
      seq_id: 2,
      data: data as never,
      loss_fn: "cross_entropy",
      loss_fn_config: {},
      forward_only: true,
    });
    const handle = await (await h.postBytes("forward_backward", bytes, "application/x-protobuf"))
      .json();
    const out = decodeForwardBackwardOutput(await h.resultProto(handle.request_id));
    assert.equal(out.loss_fn_outputs.length, 2);
    const json = viaJson as {
      loss_fn_outputs: { logprobs: { data: number[] } }[];
      metrics: Record<string, number>;
    };
    for (let i = 0; i < 2; i++) {
      assertClose(
        out.loss_fn_outputs[i].logprobs.data,
        json.loss_fn_outputs[i].logprobs.data,
        1e-6,
      );
    }
    assertClose([out.metrics["loss:sum"]], [json.metrics["loss:sum"]], 1e-5);
  });
});

Deno.test("server: load_weights is only allowed as a model's first operation", async () => {
  await withServer(async (h) => {
    const modelId = await h.newModel();
    const saved = await h.result(
      await h.post("save_weights", { model_id: modelId, path: "c", seq_id: 1 }),
    );
    const late = await h.post("load_weights", {
      model_id: modelId,
      path: saved.path,
      seq_id: 2,
      optimizer: false,
    });
    assert.equal(late.status, 400);
    assert.match(late.body.detail, /first operation/);
  });
});

Deno.test("server: a load_weights numbered 1 is first even when seq 2 arrives before it", async () => {
  await withServer(async (h) => {
    // A checkpoint to load, saved by another model.
    const other = await h.newModel();
    const saved = await h.result(
      await h.post("save_weights", { model_id: other, path: "c", seq_id: 1 }),
    );
    const modelId = await h.newModel({ seq: 1 });
    // Clients send without waiting for acceptance: seq 2 can land first and must wait for 1.
    const later = await h.post("save_weights", { model_id: modelId, path: "after", seq_id: 2 });
    assert.equal(later.status, 200);
    const load = await h.post("load_weights", {
      model_id: modelId,
      path: saved.path,
      seq_id: 1,
      optimizer: false,
    });
    assert.equal(load.status, 200);
    assert.equal((await h.result(load)).type, "load_weights");
    assert.equal((await h.result(later)).type, "save_weights");
  });
});

Deno.test("server: failed futures carry error and category", async () => {
  await withServer(async (h) => {
    const modelId = await h.newModel();
    // A checkpoint of another LoRA rank passes the submit checks but fails when the load runs.
    const otherId = await h.newModel({ rank: 8, seq: 7 });
    const saved = await h.result(
      await h.post("save_weights", { model_id: otherId, path: "r8", seq_id: 1 }),
    );
    const load = await h.post("load_weights", {
      model_id: modelId,
      path: saved.path,
      seq_id: 1,
      optimizer: false,
    });
    const res = await h.result(load);
    assert.equal(res.category, "user");
    assert.match(String(res.error), /rank 8/);
  });
});

Deno.test("server: retrieve_future long-polls and answers try_again while pending", async () => {
  await withServer(async (h) => {
    const modelId = await h.newModel();
    // seq 2 waits for seq 1, which never comes within the poll: the poll answers try_again.
    const handle = await h.post("optim_step", { adam_params: {}, model_id: modelId, seq_id: 2 });
    const t0 = performance.now();
    const r = await h.post("retrieve_future", { request_id: handle.body.request_id });
    assert.equal(r.body.type, "try_again");
    assert.ok(performance.now() - t0 >= 200, "the server held the poll");
  }, { longPollMs: 300 });
});

Deno.test("server: sampling through a sampling session, with stop strings and prompt logprobs", async () => {
  await withServer(async (h) => {
    const s = await h.post("create_sampling_session", {
      session_id: h.sessionId,
      sampling_session_seq_id: 0,
      base_model: "local/tiny",
    });
    const id = s.body.sampling_session_id;
    assert.equal((await h.get(`samplers/${encodeURIComponent(id)}`)).body.base_model, "local/tiny");
    const req = {
      sampling_session_id: id,
      seq_id: 0,
      num_samples: 3,
      prompt: { chunks: [{ type: "encoded_text", tokens: [72, 105, 33] }] },
      sampling_params: { max_tokens: 12, seed: 5, stop: ["e", "zz"] },
      prompt_logprobs: true,
      topk_prompt_logprobs: 2,
    };
    const res = await h.result(await h.post("asample", req));
    const seqs = res.sequences as { tokens: number[]; logprobs: number[]; stop_reason: string }[];
    assert.equal(seqs.length, 3);
    for (const q of seqs) {
      assert.equal(q.tokens.length, q.logprobs.length);
      if (q.stop_reason === "stop") {
        const text = new TextDecoder().decode(new Uint8Array(q.tokens.filter((t) => t < 256)));
        assert.ok(text.endsWith("e") || text.endsWith("zz"), text);
      } else assert.equal(q.tokens.length, 12);
    }
    assert.equal((res.prompt_logprobs as unknown[])[0], null);
    assert.equal((res.topk_prompt_logprobs as unknown[][])[1].length, 2);
    // The same request again (a retry) is the same future; protobuf results decode the same.
    const again = await h.post("asample", req);
    const decoded = decodeSampleResponse(await h.resultProto(again.body.request_id));
    assert.deepEqual(decoded.sequences.map((q) => q.tokens), seqs.map((q) => q.tokens));
  });
});

Deno.test("server: options it is not given keep the backend's defaults; the prefix cache follows the engine", async () => {
  assert.equal(defaultPrefixCacheBytes("onnx"), 192 * 2 ** 20);
  assert.equal(defaultPrefixCacheBytes("jax"), 0, "unbounded in the wasm heap beside a learner");
  await withServer((h) => {
    const o = h.server.backend.options;
    assert.equal(o.sessionTtlMs, LOCAL_BACKEND_DEFAULTS.sessionTtlMs);
    assert.equal(o.prefixCacheBytes, defaultPrefixCacheBytes(o.samplerEngine));
    assert.equal(
      h.server.backend.prefixCacheStats()?.entries ?? null,
      o.prefixCacheBytes > 0 ? 0 : null,
    );
    return Promise.resolve();
  });
  await withServer((h) => {
    assert.equal(h.server.backend.prefixCacheStats(), null, "0 turns it off");
    return Promise.resolve();
  }, { prefixCacheBytes: 0 });
});

Deno.test("server: a session without heartbeats expires and its models are unloaded", async () => {
  await withServer(async (h) => {
    const modelId = await h.newModel();
    const live = await h.post("create_session", { tags: [] });
    // Heartbeats every 100 ms keep it for 5 s, over twice its 2 s expiry; the other expires.
    // (A 300 ms expiry left a loaded machine 200 ms for each heartbeat's round trip.)
    for (const end = Date.now() + 5_000; Date.now() < end;) {
      await new Promise((r) => setTimeout(r, 100));
      await h.post("session_heartbeat", { session_id: live.body.session_id });
    }
    assert.equal((await h.post("get_info", { model_id: modelId })).status, 404);
    assert.equal((await h.post("session_heartbeat", { session_id: h.sessionId })).status, 404);
    assert.equal(
      (await h.post("session_heartbeat", { session_id: live.body.session_id })).status,
      200,
    );
  }, { sessionTtlMs: 2_000 });
});

Deno.test("server: a model keeps its 8 newest unnamed sampler snapshots, with a clear 404 for older", async () => {
  await withServer(async (h) => {
    const modelId = await h.newModel();
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await h.result(
        await h.post("save_weights_for_sampler", {
          model_id: modelId,
          sampling_session_seq_id: i,
          seq_id: i + 1,
        }),
      );
      ids.push(r.sampling_session_id as string);
    }
    const sample = (id: string) =>
      h.post("asample", {
        sampling_session_id: id,
        prompt: { chunks: [{ type: "encoded_text", tokens: [1, 2] }] },
        sampling_params: { max_tokens: 2 },
      });
    const old = await sample(ids[0]);
    assert.equal(old.status, 404);
    assert.match(old.body.detail, /snapshot.*dropped.*save the weights again/);
    assert.equal((await sample(ids[2])).status, 200);
    assert.equal((await sample(ids[9])).status, 200);
  });
});
