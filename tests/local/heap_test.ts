import { assert } from "../assert.ts";
import { heapBytes } from "../../lib/local/heap.ts";
import { findLocalModel, loadBaseWeights } from "../../lib/local/models.ts";
import { LoraSpecSchema } from "../../lib/local/model/config.ts";
import { Learner, type LearnerDatum } from "../../lib/local/train/mod.ts";
import { seqLenBucket } from "../../lib/local/train/batching.ts";
import { LocalSampler, type SampleJob } from "../../lib/local/sampler/mod.ts";
import { Rng } from "../../lib/util/random.ts";
import { sampleJob } from "./sample_job.ts";

const SPEC = findLocalModel("local/tiny")!;
const rng = new Rng(7n);

function datum(n: number): LearnerDatum {
  const ids = () => Int32Array.from({ length: n }, () => 1 + rng.nextU32() % 200);
  return {
    tokens: ids(),
    inputs: {
      target_tokens: { shape: [n], data: ids() },
      logprobs: { shape: [n], data: new Float32Array(n).fill(-2) },
      advantages: { shape: [n], data: Float32Array.from({ length: n }, (_, i) => i % 3 - 1) },
    },
  };
}

function job(n: number, samples: number): SampleJob {
  return sampleJob({
    prompt: Int32Array.from({ length: n }, () => 1 + rng.nextU32() % 200),
    numSamples: samples,
    promptLogprobs: samples === 1,
    seed: rng.nextU32(),
  });
}

/** A length in the same power-of-two bucket as `n` (so it reaches the same shapes). */
const sameBucket = (n: number) => n / 2 + 1 + (rng.nextU32() % (n / 2));
/** A length in the same learner bucket as `n` (`seqLenBucket`: 97–128 for 128). */
const sameLearnerBucket = (n: number) => {
  let lo = n - 1;
  while (lo > 0 && seqLenBucket(lo, Infinity) === n) lo--;
  return lo + 1 + (rng.nextU32() % (n - lo));
};

Deno.test("heap: once every shape has run, any mix of batch sizes, lengths and work leaves the heap where it was", async () => {
  const learner = await Learner.create({
    config: SPEC.config,
    base: await loadBaseWeights(SPEC),
    lora: LoraSpecSchema.parse({ rank: 8 }),
    microBatchTokens: 256,
  });
  const sampler = await LocalSampler.create({
    config: SPEC.config,
    base: await loadBaseWeights(SPEC),
    adapter: null,
    lora: null,
    engine: "jax", // this test meters jax-js's heap
  });
  const calls: Array<() => Promise<unknown>> = [];
  for (const len of [8, 32, 96, 128]) {
    for (const count of [1, 3, 9, 33]) {
      calls.push(() =>
        learner.forwardBackward(
          Array.from({ length: count }, () => datum(sameLearnerBucket(len))),
          "importance_sampling",
          {},
        )
      );
    }
  }
  for (const len of [8, 64]) {
    for (const count of [1, 4, 16]) {
      calls.push(() =>
        sampler.sample(
          Array.from({ length: count }, () => job(sameBucket(len), count === 1 ? 1 : 2)),
        )
      );
    }
  }
  calls.push(() => learner.optimStep({ learning_rate: 1e-3 }));
  const shuffled = () => calls.map((c) => ({ c, k: rng.nextU32() })).sort((a, b) => a.k - b.k);
  const round = async () => {
    for (const { c } of shuffled()) await c();
  };
  // Warm-up: every shape, then two orders (which buffers of a size are alive together depends
  // on the order, so the first few orders can still add a buffer or two).
  for (const call of calls) await call();
  await round();
  await round();
  const warm = heapBytes();
  assert.ok(warm > 0, "the heap meter sees jax-js's memory");
  // Five more rounds in new orders, with fresh lengths and contents: a leak would grow each.
  for (let i = 0; i < 5; i++) await round();
  assert.equal(heapBytes(), warm, `heap grew from ${warm} to ${heapBytes()} bytes`);
  learner.dispose();
  sampler.dispose();
});
