// Runs in a scratch Node project that installed the packed client (npm pack), against a
// Tinker-compatible server at TINKER_BASE_URL (tinkerbench's `deno task serve`). Node's own
// test runner: `node --test`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { datum, ModelInput, ServiceClient } from "tinkerbench-tinker";

const SEQS = [[5, 9, 12, 40, 41, 42, 43], [7, 7, 8, 100, 101, 102, 103]];
const batch = SEQS.map((s) =>
  datum(s.slice(0, -1), { target_tokens: s.slice(1), weights: s.slice(1).map(() => 1) })
);

test("the packed client trains two steps, saves and samples on a Tinker server", async () => {
  const service = await ServiceClient.connect({
    baseUrl: process.env.TINKER_BASE_URL,
    apiKey: "tml-local",
    tags: ["node-package-test"],
  });
  try {
    const caps = await service.getServerCapabilities();
    assert.ok(caps.supported_models.some((m) => m.model_name === "local/tiny"));
    const training = await service.createLoraTrainingClient({ baseModel: "local/tiny", rank: 4 });
    const losses = [];
    for (let step = 0; step < 2; step++) {
      // Both requests are sent before either is awaited: the futures pipeline.
      const fb = training.forwardBackward(batch, "cross_entropy");
      const optim = training.optimStep({ learning_rate: 5e-2 });
      losses.push((await fb).metrics["loss:sum"]);
      await optim;
    }
    assert.equal(losses.length, 2);
    assert.ok(losses.every(Number.isFinite), `losses ${losses}`);
    assert.notEqual(losses[1], losses[0], "the first step changed the weights");

    const sampler = await training.saveWeightsAndGetSamplingClient();
    const res = await sampler.sample({
      prompt: ModelInput.fromInts([5, 9, 12]),
      numSamples: 1,
      samplingParams: { maxTokens: 4, seed: 1 },
    });
    assert.equal(res.sequences.length, 1);
    assert.ok(res.sequences[0].tokens.length >= 1);

    const runs = await service.restClient().listTrainingRuns();
    assert.ok(JSON.stringify(runs).includes(training.modelId));
  } finally {
    service.close();
  }
});
