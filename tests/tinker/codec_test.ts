import { assert } from "../assert.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { ForwardBackwardOutputSchema, UntypedFutureSchema } from "../../lib/protocol/mod.ts";
import { datum, ServiceClient, TensorData } from "../../lib/tinker/mod.ts";
import { pollFuture } from "../../lib/tinker/futures.ts";

const SEQS = [[5, 9, 12, 40, 41, 42, 43], [7, 7, 8, 100, 101], [3, 4, 5]];
const plainBatch = SEQS.map((s) =>
  datum(s.slice(0, -1), { target_tokens: s.slice(1), weights: s.slice(1).map((_, i) => i % 2) })
);
const typedBatch = SEQS.map((s) =>
  datum(s.slice(0, -1), {
    target_tokens: TensorData.fromArray(Int32Array.from(s.slice(1)), "int64"),
    weights: Float32Array.from(s.slice(1), (_, i) => i % 2),
  })
);

Deno.test("client: protobuf results are typed arrays holding the JSON path's values", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-codec-test-" });
  const server = await startLocalServer({ dataDir, longPollMs: 2_000 });
  const service = await ServiceClient.connect({
    baseUrl: server.url,
    apiKey: "tml-local",
    backoffBaseMs: 5,
  });
  try {
    const training = await service.createLoraTrainingClient({
      baseModel: "local/tiny",
      rank: 4,
      seed: 11,
    });
    const viaProto = await training.forward(typedBatch, "cross_entropy");
    const fromPlain = await training.forward(plainBatch, "cross_entropy");
    // The JSON form of forward (SDK ≤ 0.24); its typed datums must go out as JSON lists.
    const handle = await service.http.json("POST", "forward", UntypedFutureSchema, {
      forward_input: { data: typedBatch, loss_fn: "cross_entropy" },
      model_id: training.modelId,
    });
    const viaJson = await pollFuture(service.http, handle.request_id, {
      json: ForwardBackwardOutputSchema,
    });
    assert.equal(viaProto.loss_fn_outputs.length, SEQS.length);
    viaProto.loss_fn_outputs.forEach((o, i) => {
      assert.ok(o.logprobs.data instanceof Float32Array, `datum ${i}: a Float32Array`);
      assert.deepEqual(o.logprobs.shape, [SEQS[i].length - 1]);
      assert.deepEqual(Array.from(o.logprobs.data), viaJson.loss_fn_outputs[i].logprobs.data);
      assert.deepEqual(o.logprobs.data, fromPlain.loss_fn_outputs[i].logprobs.data);
    });
    assert.equal(viaProto.metrics["loss:sum"], viaJson.metrics["loss:sum"]);
  } finally {
    service.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("client: TensorData.fromArray keeps typed arrays typed, as a copy", () => {
  const source = Float32Array.from([0.5, -1]);
  const t = TensorData.fromArray(source);
  source[0] = 9;
  assert.deepEqual(t, { data: Float32Array.from([0.5, -1]), dtype: "float32", shape: [2] });
  assert.deepEqual(
    TensorData.fromArray(Int32Array.from([42]), "int64").data,
    Int32Array.from([42]),
  );
  assert.deepEqual(TensorData.fromArray(new Uint8Array([1, 2])).data, [1, 2]);
  assert.deepEqual(
    typedBatch[0].loss_fn_inputs.weights.data,
    Float32Array.from([0, 1, 0, 1, 0, 1]),
  );
});
