import { jit, type numpy as np, tree } from "@jax-js/jax";
import { assert, assertClose } from "../assert.ts";
import { initEngine, int32Array, type ParamTree, toDevice } from "../../lib/local/engine.ts";
import {
  type ForwardSpec,
  forwardSpec,
  gptLogits,
  targetLogprobs,
} from "../../lib/local/model/gpt.ts";
import { LoraSpecSchema } from "../../lib/local/model/config.ts";
import { initBaseParameters, initLoraParameters } from "../../lib/local/model/params.ts";
import { findLocalModel } from "../../lib/local/models.ts";
import { Rng } from "../../lib/util/random.ts";
import { LocalSampler, type SampleJob, type SampleResult } from "../../lib/local/sampler/mod.ts";
import type { NamedTensors } from "../../lib/local/tensors.ts";
import type { SamplerEngine } from "../../lib/local/sampler/engines.ts";

const CFG = findLocalModel("local/tiny")!.config;
const BASE = initBaseParameters(CFG, 1);
const LORA = LoraSpecSchema.parse({ rank: 4, alpha: 8, seed: 3 });

function job(prompt: number[], over: Partial<SampleJob> = {}): SampleJob {
  return {
    prompt: Int32Array.from(prompt),
    numSamples: 1,
    maxTokens: 12,
    temperature: 1,
    topK: -1,
    topP: 1,
    seed: 1,
    stopTokens: [],
    stopSequences: [],
    promptLogprobs: false,
    topkPromptLogprobs: 0,
    ...over,
  };
}

/** An adapter whose B is non-zero, so it changes the model. */
function randomAdapter(): NamedTensors {
  const rng = new Rng(11);
  const out = initLoraParameters(CFG, LORA);
  for (const [name, t] of out) {
    if (name.endsWith("lora_b")) {
      out.set(name, { shape: t.shape, data: rng.normalArray(t.data.length, 0.5) });
    }
  }
  return out;
}

/** Every test runs on both sampler engines. */
const ENGINES: SamplerEngine[] = ["onnx", "jax"];

async function withSampler<T>(
  engine: SamplerEngine,
  adapter: NamedTensors | null,
  run: (s: LocalSampler) => Promise<T>,
): Promise<T> {
  const sampler = await LocalSampler.create({
    config: CFG,
    base: BASE,
    adapter,
    lora: adapter ? LORA : null,
    engine,
  });
  try {
    return await run(sampler);
  } finally {
    sampler.dispose();
  }
}

/**
 * Full-forward scorer, as compute_logprobs / a training forward would do it: logprobs of
 * `seq[1:]` given `seq[:-1]`, plus the log-distributions at every position.
 */
class Scorer {
  readonly #base: ParamTree;
  readonly #lora: ParamTree;
  readonly #score;

  constructor(adapter: NamedTensors | null) {
    this.#base = toDevice(BASE);
    this.#lora = adapter ? toDevice(adapter) : {};
    const spec: ForwardSpec = forwardSpec(CFG, adapter ? LORA : null);
    this.#score = jit((b: ParamTree, l: ParamTree, x: np.Array, y: np.Array) =>
      targetLogprobs(gptLogits(b, l, x, spec), y)
    );
  }

  /** `out[i] = log p(seq[i + 1] | seq[..i])`. */
  async logprobs(seq: number[]): Promise<Float32Array> {
    const x = seq.slice(0, -1), y = seq.slice(1);
    const lp = this.#score(
      tree.ref(this.#base),
      tree.ref(this.#lora),
      int32Array(x, [1, x.length]),
      int32Array(y, [1, y.length]),
    );
    return (await lp.data()) as Float32Array;
  }

  /** Greedy tokens of the full model after `seq`: argmax of each position's logits. */
  async argmaxAfter(seq: number[]): Promise<number> {
    const logits = gptLogits(
      tree.ref(this.#base),
      tree.ref(this.#lora),
      int32Array(seq, [1, seq.length]),
      forwardSpec(CFG, Object.keys(this.#lora).length ? LORA : null),
    );
    const all = (await logits.data()) as Float32Array;
    const last = all.subarray((seq.length - 1) * CFG.vocabSize);
    return last.indexOf(Math.max(...last));
  }

  dispose(): void {
    tree.dispose([this.#base, this.#lora]);
    this.#score.dispose();
  }
}

/**
 * Max |sampler logprob − recomputed logprob| over all sequences; `shift` scores the wrong
 * position, as a negative control. Not always bitwise 0: jax-js picks matmul kernels by
 * shape, so a [1, T] recompute and a [R, 1] decode step may round differently (~1 ulp).
 */
async function maxLogprobError(
  scorer: Scorer,
  jobs: SampleJob[],
  results: SampleResult[],
  shift = 0,
): Promise<number> {
  let worst = 0;
  for (const [j, r] of results.entries()) {
    const prompt = [...jobs[j].prompt];
    for (const s of r.sequences) {
      const lp = await scorer.logprobs([...prompt, ...s.tokens]);
      s.logprobs.forEach((x, i) => {
        const at = prompt.length - 1 + i - shift;
        if (at >= 0) worst = Math.max(worst, Math.abs(x - lp[at]));
      });
    }
  }
  return worst;
}

const sequences = (rs: SampleResult[]) => rs.map((r) => r.sequences.map((s) => s.tokens));

for (const engine of ENGINES) {
  Deno.test(`sampler (${engine}): sampled-token logprobs equal a full-forward recompute (and a shifted position is caught)`, async () => {
    await initEngine();
    const jobs = [
      job([5, 6, 7, 8, 9, 10, 11], { numSamples: 3, maxTokens: 20, seed: 4 }),
      job([200, 3], { numSamples: 2, maxTokens: 30, seed: 5, temperature: 0.7, topK: 50 }),
      job([1], { maxTokens: 9, seed: 6, topP: 0.9 }),
    ];
    for (const adapter of [null, randomAdapter()]) {
      const scorer = new Scorer(adapter);
      const results = await withSampler(engine, adapter, (s) => s.sample(jobs));
      const err = await maxLogprobError(scorer, jobs, results);
      const control = await maxLogprobError(scorer, jobs, results, 1);
      console.log(`max |Δ logprob| ${err}, shifted by one position ${control}`);
      // The sampler folds the adapter into its weights (W + s·A@B) while the recompute applies
      // it per token: the same function, with float32 rounding that differs by ~1e-5 nats on this
      // deliberately strong adapter (and ~1e-6 without one). A real mismatch is ≥ 0.01 (control).
      assert.ok(err <= (adapter ? 5e-5 : 5e-6), `sampler vs recompute: ${err}`);
      assert.ok(control > 0.01, `negative control: ${control}`);
      scorer.dispose();
    }
  });
}

for (const engine of ENGINES) {
  Deno.test(`sampler (${engine}): prompt logprobs and top-k prompt logprobs equal the recompute`, async () => {
    await initEngine();
    const prompt = [72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100];
    const scorer = new Scorer(null);
    const [r] = await withSampler(
      engine,
      null,
      (s) => s.sample([job(prompt, { promptLogprobs: true, topkPromptLogprobs: 5, maxTokens: 2 })]),
    );
    const want = await scorer.logprobs(prompt);
    assert.equal(r.promptLogprobs![0], null);
    assertClose(r.promptLogprobs!.slice(1) as number[], want, 1e-5, "prompt logprobs");
    assert.equal(r.topkPromptLogprobs![0], null);
    for (let t = 1; t < prompt.length; t++) {
      const top = r.topkPromptLogprobs![t]!;
      assert.equal(top.length, 5);
      for (let i = 1; i < top.length; i++) {
        assert.ok(top[i - 1][1] >= top[i][1], "sorted best first");
      }
      // Each listed logprob is the recomputed logprob of that token at that position.
      for (const [id, lp] of top) {
        const alt = await scorer.logprobs([...prompt.slice(0, t), id]);
        assertClose([lp], [alt[t - 1]], 1e-5, `top-k at ${t}`);
      }
      // The actual token is listed iff it beats the 5th entry.
      const actual = r.promptLogprobs![t]!;
      assert.equal(top.some(([id]) => id === prompt[t]), actual >= top[4][1]);
    }
    scorer.dispose();
  });
}

for (const engine of ENGINES) {
  Deno.test(`sampler (${engine}): a seed reproduces the tokens; other seeds and no seed differ`, async () => {
    await initEngine();
    const make = (seed?: number) => [job([9, 8, 7], { numSamples: 3, maxTokens: 16, seed })];
    await withSampler(engine, null, async (s) => {
      const a = sequences(await s.sample(make(42)));
      const b = sequences(await s.sample(make(42)));
      const c = sequences(await s.sample(make(43)));
      const d = sequences(await s.sample(make(undefined)));
      assert.deepEqual(a, b);
      assert.notDeepEqual(a, c);
      assert.notDeepEqual(a, d);
      assert.notDeepEqual(a[0][0], a[0][1], "samples of one job differ");
    });
  });
}

for (const engine of ENGINES) {
  Deno.test(`sampler (${engine}): temperature 0 picks the full model's argmax at every step`, async () => {
    await initEngine();
    const adapter = randomAdapter();
    const scorer = new Scorer(adapter);
    const prompt = [10, 20, 30];
    const [r] = await withSampler(
      engine,
      adapter,
      (s) =>
        s.sample([job(prompt, { temperature: 0, numSamples: 2, maxTokens: 10, seed: undefined })]),
    );
    const [first, second] = r.sequences;
    assert.deepEqual(first.tokens, second.tokens, "greedy ignores the seed");
    let seq = [...prompt];
    for (const tok of first.tokens) {
      assert.equal(tok, await scorer.argmaxAfter(seq));
      seq = [...seq, tok];
    }
    scorer.dispose();
  });
}

for (const engine of ENGINES) {
  Deno.test(`sampler (${engine}): stop tokens and stop sequences end a sequence and are included; else 'length'`, async () => {
    await initEngine();
    const prompt = [65, 66, 67];
    await withSampler(engine, null, async (s) => {
      const greedy = { temperature: 0, maxTokens: 24 };
      const [free] = await s.sample([job(prompt, greedy)]);
      const toks = free.sequences[0].tokens;
      assert.equal(toks.length, 24);
      assert.equal(free.sequences[0].stopReason, "length");

      // A single stop token: the first occurrence ends the sequence, included.
      const stopTok = toks[5];
      const [byToken] = await s.sample([job(prompt, { ...greedy, stopTokens: [stopTok] })]);
      const end = toks.indexOf(stopTok) + 1;
      assert.deepEqual(byToken.sequences[0].tokens, toks.slice(0, end));
      assert.equal(byToken.sequences[0].stopReason, "stop");
      assert.equal(byToken.sequences[0].logprobs.length, end);

      // A multi-token stop sequence: ends right after its first complete occurrence.
      const stopSeq = toks.slice(7, 10);
      const [bySeq] = await s.sample([job(prompt, { ...greedy, stopSequences: [stopSeq] })]);
      let seqEnd = 3;
      while (toks.slice(seqEnd - 3, seqEnd).join() !== stopSeq.join()) seqEnd++;
      assert.deepEqual(bySeq.sequences[0].tokens, toks.slice(0, seqEnd));
      assert.equal(bySeq.sequences[0].stopReason, "stop");
    });
  });
}

for (const engine of ENGINES) {
  Deno.test(`sampler (${engine}): a batch of jobs gives the same results as each job alone`, async () => {
    await initEngine();
    const jobs = [
      job([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20], {
        numSamples: 2,
        maxTokens: 5,
        seed: 1,
      }),
      job([100], { numSamples: 3, maxTokens: 25, seed: 2, topK: 20 }),
      job([50, 60, 70], { numSamples: 1, maxTokens: 11, seed: 3, topP: 0.8, temperature: 1.3 }),
      job([7, 7], { numSamples: 2, maxTokens: 18, seed: 4, stopTokens: [32, 101, 10] }),
    ];
    await withSampler(engine, null, async (s) => {
      const together = await s.sample(jobs);
      for (const [j, one] of jobs.entries()) {
        const [alone] = await s.sample([one]);
        assert.deepEqual(
          alone.sequences.map((q) => q.tokens),
          together[j].sequences.map((q) => q.tokens),
        );
        assertClose(
          alone.sequences.flatMap((q) => q.logprobs),
          together[j].sequences.flatMap((q) => q.logprobs),
          1e-5,
          `job ${j} logprobs`,
        );
      }
    });
  });
}

for (const engine of ENGINES) {
  Deno.test(`sampler (${engine}): more rows than one decode batch holds (two groups) stay correct`, async () => {
    await initEngine();
    // 100 + 60 rows > MAX_DECODE_ROWS (128): the second job spans both groups.
    const jobs = [
      job([3, 4, 5], { numSamples: 100, maxTokens: 3, seed: 8 }),
      job([6, 7], { numSamples: 60, maxTokens: 4, promptLogprobs: true, seed: 9 }),
    ];
    const scorer = new Scorer(null);
    const results = await withSampler(engine, null, (s) => s.sample(jobs));
    for (const [j, r] of results.entries()) {
      assert.equal(r.sequences.length, jobs[j].numSamples);
      assert.ok(r.sequences.every((q) => q.tokens.length === jobs[j].maxTokens));
      assert.equal(new Set(r.sequences.map((q) => q.tokens.join())).size, jobs[j].numSamples);
    }
    assert.equal(results[1].promptLogprobs!.length, 2);
    assert.ok(await maxLogprobError(scorer, jobs, results) <= 1e-5);
    scorer.dispose();
  });
}

for (const engine of ENGINES) {
  Deno.test(`sampler (${engine}): validation rejects bad jobs with a UserInputError`, async () => {
    await initEngine();
    await withSampler(engine, null, async (s) => {
      await assert.rejects(() => s.sample([job([1, 264])]), {
        name: "UserInputError",
        message: /prompt token 1 is 264, outside the vocabulary \[0, 264\)/,
      });
      await assert.rejects(() => s.sample([job([1], { maxTokens: 300 })]), {
        message:
          /prompt length 1 \+ max_tokens 300 = 301 exceeds the model's context of 256 tokens/,
      });
    });
  });
}

for (const engine of ENGINES) {
  Deno.test(`sampler (${engine}): an aborted call ends at the next token with the reason; the sampler samples on`, async () => {
    await initEngine();
    await withSampler(engine, null, async (s) => {
      const long = job([65, 66, 67], { temperature: 0, maxTokens: 200 });
      // Aborted before it starts: nothing runs.
      const before = new AbortController();
      before.abort(new Error("stopped before"));
      await assert.rejects(() => s.sample([long], { signal: before.signal }), /stopped before/);
      // Aborted on the first turn of the event loop, while the 200 tokens decode: a loop that
      // never yields, or checks only at its end, would answer with all of them instead.
      const during = new AbortController();
      const call = s.sample([long], { signal: during.signal });
      setTimeout(() => during.abort(new Error("stopped during")), 0);
      await assert.rejects(() => call, /stopped during/);
      const [after] = await s.sample([long]);
      assert.equal(after.sequences[0].tokens.length, 200);
    });
  });
}
