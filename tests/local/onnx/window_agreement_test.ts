/**
 * A rotary, sliding-window model (`local/long`'s architecture at test size) on the ONNX
 * sampler against the learner's chunked windowed attention: sampled and prompt log-probs agree
 * within 1e-4 on prompts far longer than the window (the sampler's ring cache wraps many
 * times), with and without a prefix-cache hit, and a ring never serves a prefix it has lost.
 */

import { assert } from "../../assert.ts";
import { LoraSpecSchema, ModelConfigSchema } from "../../../lib/local/model/config.ts";
import { initBaseParameters } from "../../../lib/local/model/params.ts";
import { Learner } from "../../../lib/local/train/learner.ts";
import type { LearnerDatum } from "../../../lib/local/train/types.ts";
import { LocalSampler, type SampleJob } from "../../../lib/local/sampler/mod.ts";
import { PrefixCache } from "../../../lib/local/sampler/prefix_cache.ts";
import { HOST_ENTRIES, HostKvCache } from "../../../lib/local/sampler/host_cache.ts";
import { validateSampleJob } from "../../../lib/local/sampler/validate.ts";
import { findLocalModel } from "../../../lib/local/models.ts";
import { sampleJob } from "../sample_job.ts";
import { prefillBlock } from "../../../lib/local/sampler/plan.ts";

const CFG = ModelConfigSchema.parse({
  vocabSize: 97,
  dModel: 32,
  nLayers: 2,
  nHeads: 2,
  maxSeqLen: 4096,
  positions: "rope",
  attentionWindow: 48,
});
const BASE = initBaseParameters(CFG, 9);
const TOLERANCE = 1e-4;

function prompt(n: number, salt: number): Int32Array {
  return Int32Array.from({ length: n }, (_, i) => (i * 31 + salt * 7 + ((i * i) >> 3)) % 97);
}

function scoreDatum(seq: number[]): LearnerDatum {
  const n = seq.length - 1;
  return {
    tokens: Int32Array.from(seq.slice(0, -1)),
    inputs: {
      target_tokens: { shape: [n], data: Int32Array.from(seq.slice(1)) },
      weights: { shape: [n], data: new Float32Array(n).fill(1) },
    },
  };
}

/** Max |sampler − learner| over sampled tokens and, where asked, prompt log-probs. */
async function maxGap(learner: Learner, sampler: LocalSampler, jobs: SampleJob[]) {
  const results = await sampler.sample(jobs);
  const seqs = results.flatMap((r, j) => r.sequences.map((s) => ({ job: jobs[j], r, s })));
  const out = await learner.forwardBackward(
    seqs.map(({ job, s }) => scoreDatum([...job.prompt, ...s.tokens])),
    "cross_entropy",
    {},
    { forwardOnly: true },
  );
  let worst = 0;
  seqs.forEach(({ job, r, s }, i) => {
    const lp = out.outputs[i].logprobs.data;
    const n = job.prompt.length;
    s.logprobs.forEach((x, t) => worst = Math.max(worst, Math.abs(x - lp[n - 1 + t])));
    r.promptLogprobs?.slice(1).forEach((x, t) => {
      worst = Math.max(worst, Math.abs(x! - lp[t]));
    });
  });
  return worst;
}

Deno.test("window: the ONNX sampler's ring cache and the learner's chunked attention agree within 1e-4", async () => {
  const learner = await Learner.create({
    config: CFG,
    base: BASE,
    lora: LoraSpecSchema.parse({ rank: 4, seed: 1 }),
  });
  const prefix = new PrefixCache(64 * 2 ** 20, HOST_ENTRIES);
  const sampler = await LocalSampler.create({
    config: CFG,
    base: BASE,
    adapter: null,
    lora: null,
    engine: "onnx",
    prefixCache: prefix,
  });
  const first = prompt(333, 1);
  const cold = await maxGap(learner, sampler, [
    sampleJob({ prompt: first, numSamples: 2, maxTokens: 70, seed: 1 }),
    sampleJob({ prompt: prompt(41, 2), maxTokens: 90, seed: 2, promptLogprobs: true }),
    sampleJob({ prompt: prompt(260, 3), maxTokens: 5, seed: 3, promptLogprobs: true }),
  ]);
  // The next turn extends the first: it reuses the cached blocks and must give the same numbers.
  const next = Int32Array.from([...first, ...prompt(75, 4)]);
  const before = prefix.stats.savedTokens;
  const warm = await maxGap(learner, sampler, [
    sampleJob({ prompt: next, maxTokens: 40, seed: 4 }), // prompt logprobs skip the cache
  ]);
  const saved = prefix.stats.savedTokens - before;
  sampler.dispose();
  learner.dispose();
  console.log({ cold, warm, saved });
  assert(cold <= TOLERANCE, `cold: ${cold}`);
  assert(warm <= TOLERANCE, `after a prefix-cache hit: ${warm}`);
  const block = prefillBlock(CFG);
  assert.equal(saved, Math.floor(333 / block) * block, "the second turn reuses whole blocks");
});

Deno.test("window: a ring holds only the window before its end", () => {
  const ring = new HostKvCache(CFG, 1, 80);
  const run = new HostKvCache(CFG, 1, 200);
  ring.write(run, 0, 0, 0, 200);
  assert(ring.holds(0, 200));
  assert(ring.holds(0, 170), "positions 123..169 are still in the ring");
  assert(!ring.holds(0, 150), "position 103 was overwritten by 183");
  const copy = new HostKvCache(CFG, 1, 80);
  assert.throws(() => copy.copyPrefix(ring, 0, 0, 150), Error, "does not hold the window");
  copy.copyPrefix(ring, 0, 0, 170);
  assert.equal(Math.max(...Array.from(copy.keyPositions, Number)), 169);
});

Deno.test("window: local/long takes 65,536 tokens and refuses one more, never truncating", () => {
  const long = findLocalModel("local/long")!.config;
  assert.equal(long.maxSeqLen, 65536);
  validateSampleJob(long, sampleJob({ prompt: new Int32Array(65535).fill(5), maxTokens: 1 }));
  assert.throws(
    () =>
      validateSampleJob(long, sampleJob({ prompt: new Int32Array(65535).fill(5), maxTokens: 2 })),
    Error,
    "exceeds the model's context of 65536 tokens",
  );
});
