/**
 * A windowed model's long prefill (`long_prefill.ts`) over several chunks: prompt log-probs
 * agree with the learner within 1e-4 across chunk and block boundaries, and a prompt's numbers
 * are bitwise the same run whole, continued from the prefix cache, or beside a shorter prompt.
 */

import { assert, assertClose } from "../../assert.ts";
import { LoraSpecSchema, ModelConfigSchema } from "../../../lib/local/model/config.ts";
import { initBaseParameters } from "../../../lib/local/model/params.ts";
import { Learner } from "../../../lib/local/train/learner.ts";
import { LocalSampler, PrefixCache } from "../../../lib/local/sampler/mod.ts";
import { HOST_ENTRIES, type HostKvCache } from "../../../lib/local/sampler/host_cache.ts";
import { LONG_PREFILL_TOKENS } from "../../../lib/local/sampler/long_prefill.ts";
import { prefillBlock } from "../../../lib/local/sampler/plan.ts";
import { sampleJob } from "../sample_job.ts";

const CFG = ModelConfigSchema.parse({
  vocabSize: 97,
  dModel: 32,
  nLayers: 2,
  nHeads: 2,
  maxSeqLen: 8192,
  positions: "rope",
  attentionWindow: 64,
});
const BASE = initBaseParameters(CFG, 5);
// Three chunks and a part: every boundary a block and a chunk can have.
const LENGTH = 3 * LONG_PREFILL_TOKENS + 77;

function prompt(n: number, salt: number): Int32Array {
  return Int32Array.from({ length: n }, (_, i) => (i * 29 + salt * 11 + ((i * 7) % 13)) % 97);
}

function sampler(prefixCache?: PrefixCache<HostKvCache>): Promise<LocalSampler> {
  return LocalSampler.create({
    config: CFG,
    base: BASE,
    adapter: null,
    lora: null,
    engine: "onnx",
    prefixCache,
  });
}

Deno.test("long prefill: prompt log-probs over several chunks agree with the learner within 1e-4", async () => {
  const seq = prompt(LENGTH, 1);
  const s = await sampler();
  const [result] = await s.sample([sampleJob({ prompt: seq, maxTokens: 1, promptLogprobs: true })]);
  s.dispose();
  const learner = await Learner.create({
    config: CFG,
    base: BASE,
    lora: LoraSpecSchema.parse({ rank: 4, seed: 1 }),
  });
  const n = LENGTH - 1;
  const out = await learner.forwardBackward(
    [{
      tokens: seq.slice(0, -1),
      inputs: {
        target_tokens: { shape: [n], data: seq.slice(1) },
        weights: { shape: [n], data: new Float32Array(n).fill(1) },
      },
    }],
    "cross_entropy",
    {},
    { forwardOnly: true },
  );
  learner.dispose();
  const got = Float32Array.from(result.promptLogprobs!.slice(1) as number[]);
  assertClose(got, out.outputs[0].logprobs.data, 1e-4, "prompt logprobs");
});

Deno.test("long prefill: a prompt continued from the prefix cache, or run beside a shorter one, gives bitwise its numbers run alone", async () => {
  const seq = prompt(LENGTH, 2);
  const job = (p: Int32Array, seed: number) => sampleJob({ prompt: p, maxTokens: 12, seed });
  const cold = await sampler();
  const [alone] = await cold.sample([job(seq, 3)]);
  const [short] = await cold.sample([job(seq.slice(0, 700), 4)]);
  const [mixed, shortMixed] = await cold.sample([job(seq, 3), job(seq.slice(0, 700), 4)]);
  cold.dispose();
  assert.deepEqual(mixed.sequences, alone.sequences, "beside a shorter prompt");
  assert.deepEqual(shortMixed.sequences, short.sequences, "the shorter one beside a longer");

  const cache = new PrefixCache<HostKvCache>(64 * 2 ** 20, HOST_ENTRIES);
  const warm = await sampler(cache);
  // An earlier turn sharing 1,300 tokens: the prompt reuses its whole blocks.
  await warm.sample([job(Int32Array.from([...seq.slice(0, 1300), 5, 6, 7]), 9)]);
  const [continued] = await warm.sample([job(seq, 3)]);
  warm.dispose();
  const block = prefillBlock(CFG);
  assert.equal(cache.stats.savedTokens, Math.floor(1300 / block) * block);
  assert.deepEqual(continued.sequences, alone.sequences, "continued from the prefix cache");
});
