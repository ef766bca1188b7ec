/**
 * Wire parity with the official Tinker SDK: our client's requests, recorded through the same
 * forwarding layer in front of the local backend, carry what the SDK's carry (the request
 * shapes in tests/compat/fixtures/sdk_requests.json, recorded from SDK 0.25.0 with
 * `deno task compat:sdk --record`; tests/compat/README.md says how to record them again).
 */

import { assert } from "../assert.ts";
import { startRecorder } from "../../lib/http/mod.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { requestShape, type Shape, shapeDifferences } from "../../lib/protocol/mod.ts";
import { ModelInput, ServiceClient } from "../../lib/tinker/mod.ts";

const FIXTURE = new URL("../compat/fixtures/sdk_requests.json", import.meta.url);

/** Routes our client must send, each like the SDK's. */
const REQUIRED = [
  "POST /api/v1/create_session",
  "POST /api/v1/create_model",
  "POST /api/v1/optim_step",
  "POST /api/v1/save_weights",
  "POST /api/v1/save_weights_for_sampler",
  "POST /api/v1/load_weights",
  "POST /api/v1/create_sampling_session",
  "POST /api/v1/asample",
  "POST /api/v1/retrieve_future",
  "POST /api/v1/forward_backward",
  "POST /api/v1/get_info",
  "POST /api/v1/weights_info",
];

Deno.test("wire parity: every request of our client carries what the official SDK's carries", async () => {
  const sdk: { sdk_version: string; requests: Record<string, Shape[]> } = JSON.parse(
    await Deno.readTextFile(FIXTURE),
  );
  assert.equal(sdk.sdk_version, "0.25.0");
  const dataDir = await Deno.makeTempDir({ prefix: "tb-parity-" });
  const server = await startLocalServer({ dataDir });
  const ours = new Map<string, Shape[]>();
  const recorder = await startRecorder(server.url, async (req) => {
    const { route, body } = await requestShape(req);
    ours.set(route, [...(ours.get(route) ?? []), body]);
  });
  const service = await ServiceClient.connect({ baseUrl: recorder.url, apiKey: "tml-local" });
  try {
    // The SDK flow's calls, as our trainer makes them.
    const training = await service.createLoraTrainingClient({ baseModel: "local/tiny", rank: 4 });
    await training.getInfo();
    const tokens = [5, 6, 7, 8];
    const datum = {
      model_input: ModelInput.fromInts(tokens.slice(0, -1)),
      loss_fn_inputs: {
        target_tokens: { data: tokens.slice(1), dtype: "int64" as const, shape: [3] },
        weights: { data: [1, 1, 1], dtype: "float32" as const, shape: [3] },
      },
    };
    await training.forwardBackward([datum], "cross_entropy").result();
    await training.optimStep({ learning_rate: 1e-3 }).result();
    await training.optimStep({ learning_rate: 1e-3, weight_decay: 0.05 }).result();
    const state = await training.saveState("ckpt-1").result();
    const samplerPath = await training.saveWeightsForSampler("samp-1").result();
    const snapshot = await training.saveWeightsAndGetSamplingClient().result();
    await snapshot.sample({
      prompt: ModelInput.fromInts(tokens),
      samplingParams: { maxTokens: 2, temperature: 1 },
    }).result();
    const sampler = await service.createSamplingClient({ modelPath: samplerPath });
    await sampler.sample({
      prompt: ModelInput.fromInts(tokens),
      numSamples: 2,
      samplingParams: { maxTokens: 2 },
      includePromptLogprobs: true,
    }).result();
    await service.createTrainingClientFromState(state, { withOptimizer: true });
  } finally {
    service.close();
    await recorder.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }

  const problems: string[] = [];
  for (const route of REQUIRED) {
    if (!ours.has(route)) problems.push(`${route}: our client never sent it here`);
  }
  for (const [route, shapes] of ours) {
    const theirs = sdk.requests[route];
    if (!theirs) continue; // a route the SDK flow did not take
    for (const shape of shapes) {
      // The nearest of the SDK's variants of this route (named and unnamed saves, …).
      const diffs = theirs.map((t) => shapeDifferences(shape, t))
        .sort((a, b) => a.length - b.length)[0];
      problems.push(...diffs.map((d) => `${route}: ${d}`));
    }
  }
  assert.deepEqual([...new Set(problems)], []);
});

Deno.test("wire parity: optim_step sends all six Adam parameters, the SDK's defaults where not given", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-parity-" });
  const server = await startLocalServer({ dataDir });
  const bodies: Record<string, unknown>[] = [];
  const recorder = await startRecorder(server.url, async (req) => {
    if (new URL(req.url).pathname.endsWith("/optim_step")) bodies.push(await req.json());
  });
  const service = await ServiceClient.connect({ baseUrl: recorder.url, apiKey: "tml-local" });
  try {
    const training = await service.createLoraTrainingClient({ baseModel: "local/tiny", rank: 4 });
    await training.optimStep({ learning_rate: 2e-3, weight_decay: 0.05 }).result();
    await training.optimStep({ learning_rate: 2e-3, weight_decay: undefined }).result();
  } finally {
    service.close();
    await recorder.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
  assert.deepEqual(bodies.map((b) => b.adam_params), [
    {
      learning_rate: 2e-3,
      beta1: 0.9,
      beta2: 0.95,
      eps: 1e-12,
      weight_decay: 0.05,
      grad_clip_norm: 0,
    },
    {
      learning_rate: 2e-3,
      beta1: 0.9,
      beta2: 0.95,
      eps: 1e-12,
      weight_decay: 0,
      grad_clip_norm: 0,
    },
  ]);
});
