import { assert, assertClose } from "../assert.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import type { LocalServer, LocalServerOptions } from "../../lib/local/server/mod.ts";
import { parseTinkerPath } from "../../lib/protocol/mod.ts";
import {
  datum,
  ModelInput,
  RequestFailedError,
  ServiceClient,
  type ServiceClientOptions,
  TinkerAPIError,
} from "../../lib/tinker/mod.ts";

async function withClient(
  fn: (service: ServiceClient, server: LocalServer) => Promise<void>,
  opts: LocalServerOptions = {},
  clientOpts: Partial<ServiceClientOptions> = {},
): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-client-test-" });
  const server = await startLocalServer({ dataDir, longPollMs: 2_000, ...opts });
  const service = await ServiceClient.connect({
    baseUrl: server.url,
    apiKey: "tml-local",
    backoffBaseMs: 5,
    ...clientOpts,
  });
  try {
    await fn(service, server);
  } finally {
    service.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}

const SEQS = [[5, 9, 12, 40, 41, 42, 43], [7, 7, 8, 100, 101, 102, 103]];
const batch = SEQS.map((s) =>
  datum(s.slice(0, -1), { target_tokens: s.slice(1), weights: s.slice(1).map(() => 1) })
);

Deno.test("client: pipelined training, sampler snapshot, and logprob agreement", async () => {
  await withClient(async (service) => {
    const caps = await service.getServerCapabilities();
    assert.ok(caps.supported_models.some((m) => m.model_name === "local/tiny"));
    const training = await service.createLoraTrainingClient({
      baseModel: "local/tiny",
      rank: 8,
      seed: 1,
    });
    const losses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const fb = training.forwardBackward(batch, "cross_entropy");
      const step = training.optimStep({ learning_rate: 1e-2 });
      losses.push((await fb).metrics["loss:sum"]);
      await step;
    }
    assert.ok(losses[9] < losses[0], `loss fell: ${losses[0]} -> ${losses[9]}`);
    const path = await training.saveState("c1");
    assert.match(path, /^tinker:\/\/.+\/weights\/c1$/);
    const sampler = await training.saveWeightsAndGetSamplingClient();
    const prompt = ModelInput.fromInts([5, 9, 12]);
    const res = await sampler.sample({
      prompt,
      numSamples: 2,
      samplingParams: { maxTokens: 6, seed: 4 },
    });
    assert.equal(res.sequences.length, 2);
    const seq = res.sequences[0];
    const lps = await sampler.computeLogprobs(ModelInput.fromInts([5, 9, 12, ...seq.tokens]));
    assertClose(lps.slice(3) as number[], seq.logprobs!, 1e-4);
    const info = await training.getInfo();
    assert.equal(info.model_data.model_name, "local/tiny");
  });
});

Deno.test("client: server errors become typed errors with the server's message", async () => {
  await withClient(async (service) => {
    await assert.rejects(
      () => service.createLoraTrainingClient({ baseModel: "Qwen/Qwen3-8B" }),
      (e) => e instanceof TinkerAPIError && e.status === 400 && /TINKER_API_KEY/.test(e.message),
    );
    const training = await service.createLoraTrainingClient({ baseModel: "local/tiny", rank: 4 });
    const other = await service.createLoraTrainingClient({ baseModel: "local/tiny", rank: 8 });
    const path = await other.saveState("r8");
    await assert.rejects(
      () => training.loadState(path).result(),
      (e) => e instanceof RequestFailedError && e.category === "user" && /rank 8/.test(e.message),
    );
  });
});

Deno.test("client: 200 steps under injected faults apply exactly 200 updates, same weights", async () => {
  const STEPS = 200;
  const run = async (faults?: LocalServerOptions["faults"]) => {
    let final: ArrayLike<number> = [], steps = 0, injected = 0;
    await withClient(async (service, server) => {
      const training = await service.createLoraTrainingClient({
        baseModel: "local/tiny",
        rank: 4,
        seed: 3,
      });
      for (let i = 0; i < STEPS; i++) {
        const fb = training.forwardBackward(batch, "cross_entropy");
        const step = training.optimStep({ learning_rate: 1e-3 });
        await fb;
        await step;
      }
      final = (await training.forward(batch, "cross_entropy")).loss_fn_outputs[0].logprobs.data;
      const saved = await training.saveState("end");
      steps = (await server.backend.checkpoints.meta(parseTinkerPath(saved))).optimizer_step;
      injected = Object.values(server.faults?.counts ?? {}).reduce((a, b) => a + b, 0);
    }, faults ? { faults } : {});
    return { final, steps, injected };
  };
  const clean = await run();
  const faulty = await run({
    seed: 7,
    latencyMs: [0, 3],
    serverError: 0.05,
    rateLimit: 0.03,
    timeout: 0.03,
    dropBefore: 0.03,
    dropAfter: 0.05,
    expired: 0.05,
    paths: "/(forward_backward|optim_step|retrieve_future)$",
  });
  assert.equal(clean.steps, STEPS);
  assert.equal(faulty.steps, STEPS, "every optim_step applied exactly once");
  assert.ok(faulty.injected > 50, `faults injected: ${faulty.injected}`);
  assertClose(faulty.final, clean.final, 1e-6, "final log-probs with and without faults");
});

Deno.test("client: submissions go out without waiting for acceptance; the server keeps seq order", async () => {
  let inFlight = 0, most = 0, holdNext = false;
  const slowFirst: typeof fetch = async (input, init) => {
    if (!/\/(forward_backward|optim_step)$/.test(String(input))) return await fetch(input, init);
    inFlight++;
    most = Math.max(most, inFlight);
    try {
      // The step's forward_backward lands last: after its optim_step and the forward behind it.
      if (holdNext) {
        holdNext = false;
        await new Promise((r) => setTimeout(r, 300));
      }
      return await fetch(input, init);
    } finally {
      inFlight--;
    }
  };
  await withClient(
    async (service) => {
      const training = await service.createLoraTrainingClient({ baseModel: "local/tiny", rank: 4 });
      const before = (await training.forward(batch, "cross_entropy")).metrics["loss:sum"];
      most = 0;
      holdNext = true;
      const fb = training.forwardBackward(batch, "cross_entropy");
      const step = training.optimStep({ learning_rate: 1e-2 });
      const after = training.forward(batch, "cross_entropy");
      assert.equal((await fb).metrics["loss:sum"], before);
      await step;
      // In arrival order the optim_step would have had no gradient, and the forward seen no step.
      const loss = (await after).metrics["loss:sum"];
      assert.ok(loss < before - 1e-3, `the step ran between: ${before} -> ${loss}`);
      assert.equal(most, 3, "the three submissions were in flight together");
    },
    {},
    { fetch: slowFirst },
  );
});

let posts = 0;
const countingFetch: typeof fetch = (input, init) => {
  if (String(input).endsWith("/forward_backward")) posts++;
  return fetch(input, init);
};

Deno.test("client: a forward_backward split into chunks equals one call", async () => {
  const data = [...batch, ...batch, ...batch.slice(0, 1)];
  let whole: { logprobs: ArrayLike<number>[]; loss: number } | undefined;
  for (const maxDatums of [1024, 2]) {
    await withClient(
      async (service) => {
        const training = await service.createLoraTrainingClient({
          baseModel: "local/tiny",
          rank: 4,
          seed: 2,
        });
        posts = 0;
        const out = await training.forward(data, "cross_entropy");
        assert.equal(posts, maxDatums === 2 ? 3 : 1, "forward_backward POSTs (chunks)");
        const got = {
          logprobs: out.loss_fn_outputs.map((o) => o.logprobs.data),
          loss: out.metrics["loss:sum"],
        };
        if (!whole) whole = got;
        else {
          assert.equal(got.logprobs.length, data.length);
          got.logprobs.forEach((lp, i) => assertClose(lp, whole!.logprobs[i], 1e-6));
          assertClose([got.loss], [whole.loss], 1e-5);
        }
      },
      {},
      { chunkLimits: { maxDatums }, fetch: countingFetch },
    );
  }
});

Deno.test("client: REST checkpoints and a training client continued from saved state", async () => {
  await withClient(async (service) => {
    const training = await service.createLoraTrainingClient({
      baseModel: "local/tiny",
      rank: 4,
      seed: 5,
    });
    await training.forwardBackward(batch, "cross_entropy");
    await training.optimStep({ learning_rate: 1e-2 });
    const path = await training.saveState("s1");
    const samplerPath = await training.saveWeightsForSampler("w1");
    const before =
      (await training.forward(batch, "cross_entropy")).loss_fn_outputs[0].logprobs.data;

    const resumed = await service.createTrainingClientFromState(path, { withOptimizer: true });
    const after = (await resumed.forward(batch, "cross_entropy")).loss_fn_outputs[0].logprobs.data;
    assertClose(after, before, 0, "identical logprobs after loading");

    const rest = service.restClient();
    assert.equal((await rest.weightsInfo(path)).lora_rank, 4);
    assert.ok(
      (await rest.listTrainingRuns()).training_runs.some((r) =>
        r.training_run_id === training.modelId
      ),
    );
    const paths = async () =>
      (await rest.listCheckpoints(training.modelId)).checkpoints.map((c) => c.tinker_path);
    assert.deepEqual((await paths()).sort(), [path, samplerPath].sort());
    await rest.setCheckpointTtl(samplerPath, 600);
    const ttl = (await rest.listUserCheckpoints()).checkpoints.find((c) =>
      c.tinker_path === samplerPath
    );
    assert.ok(ttl?.expires_at);
    await rest.setCheckpointPublic(path, true);
    assert.match((await rest.getCheckpointArchiveUrl(path)).url, /archive\.tar$/);
    await rest.deleteCheckpoint(samplerPath);
    assert.deepEqual(await paths(), [path]);
    await assert.rejects(
      () => rest.deleteCheckpoint("tinker://x/models/y"),
      /invalid checkpoint kind/,
    );
  });
});

Deno.test("client: forwardBackwardCustom with the cross-entropy gradient trains like cross_entropy", async () => {
  const train = async (custom: boolean) => {
    let result: { lp: ArrayLike<number>; metrics: Record<string, number> } | undefined;
    await withClient(async (service) => {
      const training = await service.createLoraTrainingClient({
        baseModel: "local/tiny",
        rank: 4,
        seed: 9,
      });
      const weights = batch.map((d) => d.loss_fn_inputs.weights.data);
      const fb = custom
        ? training.forwardBackwardCustom(batch, (_data, lps) => ({
          loss: lps.reduce((a, lp, i) => a - lp.reduce((s, x, t) => s + x * weights[i][t], 0), 0),
          gradients: lps.map((lp, i) => lp.map((_, t) => -weights[i][t])),
          metrics: { "probe:sum": 1 },
        }))
        : training.forwardBackward(batch, "cross_entropy");
      const metrics = (await fb).metrics;
      await training.optimStep({ learning_rate: 1e-2 });
      result = {
        lp: (await training.forward(batch, "cross_entropy")).loss_fn_outputs[0].logprobs.data,
        metrics,
      };
    });
    return result!;
  };
  const builtin = await train(false);
  const custom = await train(true);
  assertClose(custom.lp, builtin.lp, 1e-6, "weights after one step");
  assertClose([custom.metrics["custom_loss:sum"]], [builtin.metrics["loss:sum"]], 1e-5);
  assert.equal(custom.metrics["probe:sum"], 1);
});

Deno.test("client: an optimStep called right after forwardBackwardCustom runs after its backward", async () => {
  const CE = (lps: number[][]) => ({
    loss: -lps.reduce((a, lp) => a + lp.reduce((s, x) => s + x, 0), 0),
    gradients: lps.map((lp) => lp.map(() => -1)),
  });
  const train = async (awaited: boolean) => {
    let lp: ArrayLike<number> = [];
    await withClient(async (service) => {
      const training = await service.createLoraTrainingClient({
        baseModel: "local/tiny",
        rank: 4,
        seed: 9,
      });
      // A slow loss: the optim_step is called (and, unawaited, sent) while it runs.
      const fb = training.forwardBackwardCustom(batch, async (_data, lps) => {
        await new Promise((r) => setTimeout(r, 300));
        return CE(lps);
      });
      if (awaited) await fb;
      const optim = training.optimStep({ learning_rate: 1e-2 });
      const after = training.forward(batch, "cross_entropy");
      await fb;
      await optim;
      lp = (await after).loss_fn_outputs[0].logprobs.data;
    });
    return lp;
  };
  const awaited = await train(true);
  const unawaited = await train(false);
  assertClose(unawaited, awaited, 1e-6, "the step's update applied the custom gradient");
});

Deno.test("client: forwardBackwardCustom rejects extra inputs and mis-shaped gradients", async () => {
  await withClient(async (service) => {
    const training = await service.createLoraTrainingClient({ baseModel: "local/tiny", rank: 4 });
    const withAdvantages = datum([1, 2], { target_tokens: [2, 3], advantages: [1, 1] });
    assert.throws(
      () => training.forwardBackwardCustom([withAdvantages], () => ({ loss: 0, gradients: [] })),
      /advantages/,
    );
    // Called before the failure is known, the optim_step waits for it, then still runs.
    const bad = training.forwardBackwardCustom(batch, () => ({ loss: 0, gradients: [[1]] }));
    const optim = training.optimStep({ learning_rate: 1e-2 });
    await assert.rejects(() => bad.result(), /one value per log-prob/);
    await optim;
  });
});
