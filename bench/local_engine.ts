/**
 * Benchmark of the local engine against PyTorch CPU on the identical model (the `local/bench`
 * config): train step (forward + backward + AdamW) with LoRA and full fine-tuning, and KV-cache
 * sampling throughput. Both run in the same process tree, alternating rounds, so the ratio is
 * measured under the same machine load.
 *
 * @module
 */

import { Learner, type LearnerDatum } from "../lib/local/train/mod.ts";
import { LocalSampler, type SampleJob, type SamplerEngine } from "../lib/local/sampler/mod.ts";
import { foldLoraOnHost } from "../lib/local/model/lora.ts";
import { GptSession } from "../lib/local/onnx/session.ts";
import { findLocalModel, loadBaseWeights } from "../lib/local/models.ts";
import { LoraSpecSchema } from "../lib/local/model/config.ts";
import { initLoraParameters } from "../lib/local/model/params.ts";
import { Rng } from "../lib/util/random.ts";

/** Sizes of the benchmark (the measurements file's bench model and work). */
export const BENCH = {
  model: "local/bench",
  batch: 16,
  seq: 128,
  rank: 32,
  alpha: 32,
  steps: 8,
  warmup: 2,
  sampleRows: 16,
  prompt: 16,
  newTokens: 112,
  sampleReps: 4,
} as const;

/** Median of a list of numbers. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function randomDatums(vocab: number, rng: Rng): LearnerDatum[] {
  return Array.from({ length: BENCH.batch }, () => {
    const toks = Int32Array.from({ length: BENCH.seq + 1 }, () => rng.int(vocab));
    return {
      tokens: toks.slice(0, -1),
      inputs: {
        target_tokens: { shape: [BENCH.seq], data: toks.slice(1) },
        weights: { shape: [BENCH.seq], data: new Float32Array(BENCH.seq).fill(1) },
      },
    };
  });
}

/** Times `steps` train steps of our learner (after warm-up, which includes jit compiles). */
export async function timeOurTrainStep(trainable: "lora" | "full") {
  const spec = findLocalModel(BENCH.model)!;
  const learner = await Learner.create({
    config: spec.config,
    base: await loadBaseWeights(spec),
    lora: LoraSpecSchema.parse({ rank: BENCH.rank, alpha: BENCH.alpha }),
    trainable,
  });
  const data = randomDatums(spec.config.vocabSize, new Rng(0));
  const times: number[] = [];
  let firstStepMs = 0;
  for (let i = 0; i < BENCH.warmup + BENCH.steps; i++) {
    const t0 = performance.now();
    await learner.forwardBackward(data, "cross_entropy", {}, {});
    await learner.optimStep({ learning_rate: 1e-4 });
    const ms = performance.now() - t0;
    if (i === 0) firstStepMs = ms;
    if (i >= BENCH.warmup) times.push(ms);
  }
  learner.dispose();
  return { median_ms: median(times), all_ms: times, first_step_ms: firstStepMs };
}

/**
 * Sampling throughput of our sampler on `engine` with a LoRA adapter active: 16 distinct
 * prompts (`distinct`), or one prompt with 16 samples (`group`, as a GRPO group samples).
 */
export async function timeOurSampling(
  mode: "distinct" | "group",
  engine: SamplerEngine,
) {
  const spec = findLocalModel(BENCH.model)!;
  const lora = LoraSpecSchema.parse({ rank: BENCH.rank, alpha: BENCH.alpha });
  const sampler = await LocalSampler.create({
    config: spec.config,
    base: await loadBaseWeights(spec),
    adapter: initLoraParameters(spec.config, lora),
    lora,
    engine,
  });
  const rng = new Rng(1);
  const rates: number[] = [];
  for (let rep = 0; rep < BENCH.sampleReps + 1; rep++) {
    const job = (i: number): SampleJob => ({
      prompt: Int32Array.from({ length: BENCH.prompt }, () => rng.int(spec.config.vocabSize)),
      numSamples: mode === "group" ? BENCH.sampleRows : 1,
      maxTokens: BENCH.newTokens,
      temperature: 1,
      topK: -1,
      topP: 1,
      seed: rep * 100 + i,
      stopTokens: [],
      stopSequences: [],
      promptLogprobs: false,
      topkPromptLogprobs: 0,
    });
    const jobs = mode === "group"
      ? [job(0)]
      : Array.from({ length: BENCH.sampleRows }, (_, i) => job(i));
    const t0 = performance.now();
    const out = await sampler.sample(jobs);
    const tokens = out.reduce(
      (n, r) => n + r.sequences.reduce((m, q) => m + q.tokens.length, 0),
      0,
    );
    // The first rep compiles the prefill and decode kernels; report steady state.
    if (rep > 0) rates.push(tokens / ((performance.now() - t0) / 1000));
  }
  sampler.dispose();
  return { median_tok_s: median(rates), all_tok_s: rates };
}

/** Runs the PyTorch reference (Debian's python3-torch) on the same sizes, or explains why not. */
export async function runTorchReference(): Promise<Record<string, unknown> | { error: string }> {
  const python = "/usr/bin/python3";
  const cfg = {
    vocab: findLocalModel(BENCH.model)!.config.vocabSize,
    d: 128,
    layers: 4,
    heads: 4,
    seq: BENCH.seq,
    batch: BENCH.batch,
    rank: BENCH.rank,
    alpha: BENCH.alpha,
    steps: BENCH.steps,
    warmup: BENCH.warmup,
    threads: navigator.hardwareConcurrency,
    prompt: BENCH.prompt,
    new_tokens: BENCH.newTokens,
    sample_rows: BENCH.sampleRows,
    sample_reps: BENCH.sampleReps,
  };
  try {
    const out = await new Deno.Command(python, {
      args: [new URL("./torch_reference.py", import.meta.url).pathname, JSON.stringify(cfg)],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      const err = new TextDecoder().decode(out.stderr).trim().split("\n").at(-1);
      return { error: `${err} (install: apt-get install python3-torch libopenblas0-pthread)` };
    }
    return JSON.parse(new TextDecoder().decode(out.stdout));
  } catch (e) {
    return {
      error: `${(e as Error).message}; install: apt-get install python3-torch libopenblas0-pthread`,
    };
  }
}

/**
 * What a new sampler version (after an optim_step) costs on ONNX Runtime, both ways: a session
 * rebuilt with the new weights stored in the graph (fold, build, load), or one session with
 * the weights as inputs (fold only, then every run passes them). Times making a version and a
 * decode step of `sampleRows` rows over 64 cache slots, medians of `reps`; then the same decode
 * step with one and with two intra-op threads.
 */
export async function timeNewVersion(reps = 5) {
  const spec = findLocalModel(BENCH.model)!;
  const cfg = spec.config;
  const lora = LoraSpecSchema.parse({ rank: BENCH.rank, alpha: BENCH.alpha });
  const rng = new Rng(3);
  const base = await loadBaseWeights(spec);
  const adapter = () => {
    const a = initLoraParameters(cfg, lora);
    for (const [n, t] of a) {
      a.set(n, { shape: t.shape, data: rng.normalArray(t.data.length, 0.02) });
    }
    return a;
  };
  const rows = BENCH.sampleRows, slots = 64, h = cfg.nHeads, hd = cfg.dModel / h;
  const cache = Array.from({ length: cfg.nLayers }, () => new Float32Array(rows * h * hd * slots));
  const step = {
    rows,
    tokens: 1,
    slots,
    ids: new BigInt64Array(rows).fill(5n),
    positions: new BigInt64Array(rows).fill(40n),
    keyBias: new Float32Array(rows * (slots + 1)),
    headIndex: new BigInt64Array(rows),
    heads: 1,
    pastKeys: cache,
    pastValues: cache,
  };
  const out: Record<string, Record<string, number>> = {};
  for (const weightsAsInputs of [false, true]) {
    const versionMs: number[] = [], stepMs: number[] = [];
    let shared: GptSession | undefined;
    for (let rep = 0; rep < reps + 1; rep++) {
      const t0 = performance.now();
      const folded = foldLoraOnHost(base, adapter(), lora.alpha / lora.rank);
      // With weights as inputs one session serves every version; only its first is built.
      const gpt = weightsAsInputs && shared
        ? shared.withWeights(folded)
        : await GptSession.create(cfg, folded, { threads: 1, weightsAsInputs });
      if (weightsAsInputs) shared ??= gpt;
      const made = performance.now() - t0;
      await gpt.run(step);
      const t1 = performance.now();
      for (let i = 0; i < 20; i++) await gpt.run(step);
      if (rep > 0) {
        versionMs.push(made);
        stepMs.push((performance.now() - t1) / 20);
      }
      if (!weightsAsInputs) await gpt.release();
    }
    await shared?.release();
    out[weightsAsInputs ? "weights_as_inputs" : "rebuilt_session"] = {
      version_ms: median(versionMs),
      decode_step_ms: median(stepMs),
    };
  }
  // The sampler's sessions use one intra-op thread; the same step with two, for the record.
  const base2 = foldLoraOnHost(base, adapter(), lora.alpha / lora.rank);
  for (const threads of [1, 2]) {
    const gpt = await GptSession.create(cfg, base2, { threads });
    const times: number[] = [];
    for (let rep = 0; rep < reps + 1; rep++) {
      const t0 = performance.now();
      for (let i = 0; i < 20; i++) await gpt.run(step);
      if (rep > 0) times.push((performance.now() - t0) / 20);
    }
    await gpt.release();
    out[`decode_step_${threads}_thread${threads > 1 ? "s" : ""}`] = {
      decode_step_ms: median(times),
    };
  }
  return out;
}
