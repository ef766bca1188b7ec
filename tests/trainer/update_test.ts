import { assert, assertClose } from "../assert.ts";
import { JOIN_MS, StepUpdate, type UpdateContext } from "../../lib/trainer/update.ts";
import { evidencePlan } from "../../lib/scoring/compose.ts";
import type { ForwardBackwardOutput } from "../../lib/protocol/mod.ts";
import type { Datum } from "../../lib/protocol/mod.ts";
import { ModelInput, TensorData } from "../../lib/tinker/mod.ts";
import type { TrainingClient } from "../../lib/tinker/mod.ts";
import { Rng } from "../../lib/util/random.ts";
import { episode, group, RL_SETTINGS } from "../rl/fixtures.ts";
import { withService } from "./fixtures.ts";

/** A group of 4 one-turn episodes with mixed rewards: every episode becomes a datum. */
const mixed = (id: string) =>
  group(id, [1, 0, 1, 0].map((r) => episode(r ? "even" : "odd", r, "")));

/**
 * A training client that counts the calls it is sent and answers each forward_backward when
 * the test releases it: the update's calls are what the joining rule is about.
 */
function countingClient() {
  const fbs: { datums: number; release: () => void }[] = [];
  const order: string[] = [];
  const done = <T>(v: T) => ({ result: () => Promise.resolve(v) });
  const training = {
    forwardBackward(data: Datum[]) {
      order.push("forward_backward");
      const out = Promise.withResolvers<ForwardBackwardOutput>();
      const output: ForwardBackwardOutput = {
        loss_fn_output_type: "importance_sampling",
        loss_fn_outputs: data.map(() => ({})),
        metrics: { "loss:sum": data.length },
      } as unknown as ForwardBackwardOutput;
      fbs.push({ datums: data.length, release: () => out.resolve(output) });
      return { result: () => out.promise };
    },
    optimStep() {
      order.push("optim_step");
      return done({ metrics: {} });
    },
    saveWeightsAndGetSamplingClient() {
      order.push("save");
      return done({});
    },
  } as unknown as TrainingClient;
  return { training, fbs, order };
}

function update(training: TrainingClient): StepUpdate {
  const ctx: UpdateContext = {
    training,
    plan: evidencePlan(RL_SETTINGS),
    sources: { judgeSampling: {} as UpdateContext["sources"]["judgeSampling"] },
    method: RL_SETTINGS,
    optimizer: {
      lossFn: "importance_sampling",
      lossFnConfig: {},
      adam: { learning_rate: 1e-3, weight_decay: 0 },
      epochs: 1,
    },
    t0: performance.now(),
  };
  return new StepUpdate(ctx);
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("update: minibatches that arrive together go out as one forward_backward", async () => {
  const { training, fbs, order } = countingClient();
  const u = update(training);
  for (const id of ["a", "b", "c", "d"]) u.add([mixed(id)]);
  const finished = u.finish();
  while (fbs.length === 0) await tick(1);
  fbs[0].release();
  const out = await finished;
  assert.deepEqual(fbs.map((f) => f.datums), [16], "one call of the 4 groups' 16 datums");
  assert.deepEqual(order, ["forward_backward", "optim_step", "save"]);
  assert.equal(out.datums, 16);
  assert.equal(out.groups.length, 4);
});

Deno.test("update: minibatches queued behind a call in flight go out together as the next one", async () => {
  const { training, fbs, order } = countingClient();
  const u = update(training);
  u.add([mixed("a")]);
  await tick(JOIN_MS * 2);
  assert.deepEqual(fbs.map((f) => f.datums), [4], "the first call went out after its wait");
  for (const id of ["b", "c", "d"]) u.add([mixed(id)]);
  await tick(JOIN_MS * 2);
  assert.equal(fbs.length, 1, "nothing else goes out while the first call is in flight");
  const finished = u.finish();
  fbs[0].release();
  while (fbs.length < 2) await tick(1);
  fbs[1].release();
  const out = await finished;
  assert.deepEqual(fbs.map((f) => f.datums), [4, 12], "the 3 queued groups as one call");
  assert.deepEqual(order, ["forward_backward", "forward_backward", "optim_step", "save"]);
  assert.equal(out.datums, 16);
});

/** 32 one-turn RL datums (4 groups × 8) of random tokens, with sampler log-probs and advantages. */
function rlDatums(): Datum[] {
  const rng = new Rng(7);
  return Array.from({ length: 32 }, (_, i) => {
    const n = 10 + (i % 5);
    const tokens = Array.from({ length: n + 1 }, () => rng.int(200));
    const adv = (i % 8) < 4 ? 0.5 : -0.5;
    return {
      model_input: ModelInput.fromInts(tokens.slice(0, -1)),
      loss_fn_inputs: {
        target_tokens: TensorData.fromArray(tokens.slice(1), "int64"),
        logprobs: TensorData.fromArray(tokens.slice(1).map(() => -3 - rng.uniform())),
        advantages: TensorData.fromArray(tokens.slice(1).map((_, t) => (t < 4 ? 0 : adv))),
      },
    };
  });
}

Deno.test("update: on the local backend, one call of 4 groups trains as 4 calls do (same gradient sum, same weights)", async () => {
  await withService(async (service) => {
    const datums = rlDatums();
    const trained = async (calls: Datum[][]) => {
      const t = await service.createLoraTrainingClient({
        baseModel: "local/tiny",
        rank: 4,
        seed: 1,
      });
      const lps = async () =>
        (await t.forward(datums, "importance_sampling")).loss_fn_outputs.flatMap((o) =>
          Array.from(o.logprobs.data)
        );
      const before = await lps();
      for (const c of calls) await t.forwardBackward(c, "importance_sampling");
      const step = await t.optimStep({ learning_rate: 1e-2 });
      const logprobs = await lps();
      const moved = Math.max(...logprobs.map((v, i) => Math.abs(v - before[i])));
      return { gradNorm: step.metrics?.["grad_norm:mean"] ?? NaN, logprobs, moved };
    };
    const one = await trained([datums]);
    const four = await trained([0, 1, 2, 3].map((g) => datums.slice(g * 8, g * 8 + 8)));
    assert.ok(one.gradNorm > 0, `a gradient to compare (norm ${one.gradNorm})`);
    assert.ok(one.moved > 1e-2, `the step moved log-probs well past the tolerance (${one.moved})`);
    // Float32 sums in another order: the gradient norms agree to 1e-4 relative, and the weights
    // after one Adam step give log-probs within 1e-4 of each other.
    assertClose([four.gradNorm / one.gradNorm], [1], 1e-4);
    assertClose(four.logprobs, one.logprobs, 1e-4);
  });
});
