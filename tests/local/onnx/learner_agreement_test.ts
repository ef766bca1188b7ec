/**
 * The sampler's log-probs against the learner's forward on the same tokens, as the losses
 * assume (importance ratios of 1 for unchanged weights): on the bare model, with a strong
 * adapter, and with a new sampler made after optimizer steps. Both engines.
 */

import { assert } from "../../assert.ts";
import { LoraSpecSchema } from "../../../lib/local/model/config.ts";
import { initBaseParameters, initLoraParameters } from "../../../lib/local/model/params.ts";
import { findLocalModel } from "../../../lib/local/models.ts";
import { Learner } from "../../../lib/local/train/learner.ts";
import type { LearnerDatum } from "../../../lib/local/train/types.ts";
import {
  LocalSampler,
  type SampleJob,
  type SamplerEngine,
} from "../../../lib/local/sampler/mod.ts";
import type { NamedTensors } from "../../../lib/local/tensors.ts";
import { Rng } from "../../../lib/util/random.ts";
import { sampleJob } from "../sample_job.ts";

const CFG = findLocalModel("local/tiny")!.config;
const BASE = initBaseParameters(CFG, 5);
const LORA = LoraSpecSchema.parse({ rank: 8, alpha: 32, seed: 2 });
const TOLERANCE = 1e-4;

/** An adapter whose B is large, so the adapted model is far from the base. */
function strongAdapter(): NamedTensors {
  const rng = new Rng(17);
  const out = initLoraParameters(CFG, LORA);
  for (const [name, t] of out) {
    if (name.endsWith("lora_b")) {
      out.set(name, { shape: t.shape, data: rng.normalArray(t.data.length, 0.3) });
    }
  }
  return out;
}

const JOBS: SampleJob[] = [
  sampleJob({ prompt: Int32Array.from([10, 20, 30, 40]), numSamples: 3, maxTokens: 24, seed: 1 }),
  sampleJob({ prompt: Int32Array.from([7]), maxTokens: 40, seed: 2, temperature: 0.8, topK: 20 }),
  sampleJob({ prompt: Int32Array.from({ length: 50 }, (_, i) => (i * 7) % 250), seed: 3 }),
];

/** A datum scoring `seq[1:]` given `seq[:-1]`. */
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

/** Max |sampled logprob − learner forward logprob| over every sampled token of `JOBS`. */
async function maxGap(learner: Learner, sampler: LocalSampler): Promise<number> {
  const results = await sampler.sample(JOBS);
  const seqs = results.flatMap((r, j) =>
    r.sequences.map((s) => ({ prompt: [...JOBS[j].prompt], s }))
  );
  const out = await learner.forwardBackward(
    seqs.map(({ prompt, s }) => scoreDatum([...prompt, ...s.tokens])),
    "cross_entropy",
    {},
    { forwardOnly: true },
  );
  let worst = 0;
  seqs.forEach(({ prompt, s }, i) => {
    const lp = out.outputs[i].logprobs.data;
    s.logprobs.forEach((x, t) => {
      worst = Math.max(worst, Math.abs(x - lp[prompt.length - 1 + t]));
    });
  });
  return worst;
}

async function samplerOf(engine: SamplerEngine, learner: Learner): Promise<LocalSampler> {
  return await LocalSampler.create({
    config: CFG,
    base: BASE,
    adapter: await learner.exportAdapter(),
    lora: LORA,
    engine,
  });
}

for (const engine of ["onnx", "jax"] as const) {
  Deno.test(`sampler (${engine}) vs learner: bare model, strong adapter, and a new sampler after optim_steps agree within 1e-4`, async () => {
    // Bare: a fresh adapter (B = 0) is the base model; the sampler also runs without one.
    const bare = await Learner.create({ config: CFG, base: BASE, lora: LORA });
    const plain = await LocalSampler.create({
      config: CFG,
      base: BASE,
      adapter: null,
      lora: null,
      engine,
    });
    const bareGap = await maxGap(bare, plain);
    plain.dispose();
    bare.dispose();

    const learner = await Learner.create({
      config: CFG,
      base: BASE,
      lora: LORA,
      adapter: strongAdapter(),
    });
    const before = await samplerOf(engine, learner);
    const strongGap = await maxGap(learner, before);

    // Train toward a fixed sequence; the next sampler must follow the new weights.
    const target = Array.from({ length: 30 }, (_, i) => (i * 13 + 1) % CFG.vocabSize);
    for (let i = 0; i < 3; i++) {
      await learner.forwardBackward([scoreDatum(target)], "cross_entropy", {});
      await learner.optimStep({ learning_rate: 1e-2 });
    }
    const after = await samplerOf(engine, learner);
    const afterGap = await maxGap(learner, after);
    const probe = [
      sampleJob({ prompt: Int32Array.from(target.slice(0, 10)), promptLogprobs: true }),
    ];
    const [old] = await before.sample(probe);
    const [now] = await after.sample(probe);
    const moved = Math.max(
      ...old.promptLogprobs!.slice(1).map((x, i) => Math.abs(x! - now.promptLogprobs![i + 1]!)),
    );
    before.dispose();
    after.dispose();
    learner.dispose();
    console.log({ engine, bareGap, strongGap, afterGap, moved });
    assert.ok(bareGap <= TOLERANCE, `bare model: ${bareGap}`);
    assert.ok(strongGap <= TOLERANCE, `strong adapter: ${strongGap}`);
    assert.ok(afterGap <= TOLERANCE, `after optim_steps: ${afterGap}`);
    assert.ok(moved > 0.01, `the new sampler samples the new weights (moved ${moved})`);
  });
}
