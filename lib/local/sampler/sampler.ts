/**
 * The local sampler: a frozen copy of base weights (plus an optional LoRA adapter) on the
 * device, sampling many prompts at once with a KV cache.
 *
 * Log-probability semantics (RL-critical): every returned logprob — of sampled tokens and
 * of prompt tokens — is the log-softmax of the model's *raw* logits (temperature 1, no
 * top-k/top-p), i.e. exactly what a full forward pass (`compute_logprobs`, a training
 * forward) gives for that token. Temperature, top-k and top-p only change which token is
 * drawn, never the reported number, so importance ratios between the sampler and the
 * learner are 1 for unchanged weights.
 *
 * @module
 */

import type { LoraSpec, ModelConfig } from "../model/config.ts";
import { checkBaseParameters, loraTargets } from "../model/params.ts";
import { Rng } from "../../util/random.ts";
import type { NamedTensors } from "../tensors.ts";
import {
  type AnyPrefixCache,
  defaultSamplerEngine,
  type GroupRunner,
  jaxRunner,
  onnxRunner,
  type SamplerEngine,
} from "./engines.ts";
import type { JobState } from "./rows.ts";
import type { PrefixCache } from "./prefix_cache.ts";
import type { HostKvCache } from "./host_cache.ts";
import { planGroups } from "./plan.ts";
import { StopMatcher } from "./stops.ts";
import type { SampleJob, SampleResult } from "./types.ts";
import { validateSampleJob } from "./validate.ts";

/** Arguments of {@link LocalSampler.create}. */
export interface LocalSamplerOptions {
  config: ModelConfig;
  /** Base weights (checked against `config`). */
  base: NamedTensors;
  /** LoRA adapter tensors (`<linear>.lora_a` / `.lora_b`), or null for the bare model. */
  adapter: NamedTensors | null;
  /** The adapter's scale settings; required with an adapter. */
  lora: Pick<LoraSpec, "alpha" | "rank"> | null;
  /**
   * Where prompts look up and store the keys and values of earlier sequences (shared by a
   * backend's samplers, each its own owner). Absent: every prompt runs in full.
   */
  prefixCache?: AnyPrefixCache;
  /** The engine to decode on; default {@link defaultSamplerEngine}. */
  engine?: SamplerEngine;
}

/** Sampling runs one at a time process-wide: they share the CPU and the 4 GiB wasm heap. */
let queue: Promise<unknown> = Promise.resolve();

function serialize<T>(run: () => Promise<T>): Promise<T> {
  const result = queue.then(run);
  queue = result.catch(() => {});
  return result;
}

/**
 * Samples continuations from one set of weights.
 *
 * @example
 * const sampler = await LocalSampler.create({ config, base, adapter: null, lora: null });
 * const [res] = await sampler.sample([{ prompt, numSamples: 4, maxTokens: 32, temperature: 1,
 *   topK: -1, topP: 1, stopTokens: [eos], stopSequences: [], promptLogprobs: false,
 *   topkPromptLogprobs: 0 }]);
 * sampler.dispose();
 */
export class LocalSampler {
  /** The architecture of the weights this sampler holds. */
  readonly config: ModelConfig;
  /** The engine it decodes on. */
  readonly engine: SamplerEngine;
  #runner!: GroupRunner;
  #disposed = false;

  private constructor(config: ModelConfig, engine: SamplerEngine) {
    this.config = config;
    this.engine = engine;
  }

  /** Loads the weights on the engine. Throws if they don't match `config`. */
  static async create(opts: LocalSamplerOptions): Promise<LocalSampler> {
    checkBaseParameters(opts.config, opts.base);
    if (opts.adapter && !opts.lora) throw new Error("sampler: an adapter needs its lora settings");
    if (opts.adapter && opts.lora) checkAdapter(opts.config, opts.adapter, opts.lora.rank);
    const engine = opts.engine ?? defaultSamplerEngine();
    const prefix = opts.prefixCache;
    if (prefix && prefix.engine !== engine) {
      throw new Error(`sampler: a prefix cache of ${prefix.engine} rows on the ${engine} engine`);
    }
    const sampler = new LocalSampler(opts.config, engine);
    const weights = {
      config: opts.config,
      base: opts.base,
      adapter: opts.adapter,
      lora: opts.lora,
    };
    sampler.#runner = engine === "onnx"
      ? await onnxRunner(
        weights,
        prefix ? { cache: prefix as PrefixCache<HostKvCache>, owner: sampler } : undefined,
      )
      : await jaxRunner(
        weights,
        prefix ? { cache: prefix as PrefixCache, owner: sampler } : undefined,
      );
    return sampler;
  }

  /**
   * Samples every job; results are in job order. All rows of all jobs decode together
   * (up to the batch cap). Validates every job first, so a bad job fails the whole call with
   * a `UserInputError` before any work starts. Aborting `signal` (the run stopping) ends the
   * call at the next token with the signal's reason: no partial results.
   */
  async sample(jobs: SampleJob[], o: { signal?: AbortSignal } = {}): Promise<SampleResult[]> {
    if (this.#disposed) throw new Error("sampler: used after dispose()");
    for (const job of jobs) validateSampleJob(this.config, job);
    if (jobs.length === 0) return [];
    return await serialize(async () => {
      if (this.#disposed) throw new Error("sampler: disposed while a sample call was queued");
      const states = jobs.map(jobState);
      for (const group of planGroups(this.config, jobs)) {
        o.signal?.throwIfAborted();
        await this.#runner.run(states, group, o.signal);
      }
      return states.map((s) => s.result);
    });
  }

  /** Frees the weights once queued sample calls have finished. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    const free = () => this.#runner.free();
    queue = queue.then(free, free);
  }
}

/** Fresh per-request state of a job: stop matcher, draw knobs and per-sample generators. */
function jobState(job: SampleJob): JobState {
  const seed = job.seed ?? randomSeed();
  return {
    job,
    draw: { temperature: job.temperature, topK: job.topK, topP: job.topP },
    stops: new StopMatcher(job.stopTokens, job.stopSequences),
    rngs: sampleRngs(seed, job.numSamples),
    result: { sequences: new Array(job.numSamples) },
  };
}

/**
 * One generator per sample, derived from the job seed: sample `i` draws the same tokens
 * whichever other jobs share the batch and however the rows are grouped or compacted.
 */
function sampleRngs(seed: number, n: number): Rng[] {
  const root = new Rng(seed);
  return Array.from({ length: n }, () => {
    const hi = BigInt(root.nextU32());
    return new Rng((hi << 32n) | BigInt(root.nextU32()));
  });
}

function randomSeed(): number {
  const [hi, lo] = crypto.getRandomValues(new Uint32Array(2));
  return (hi & 0x1fffff) * 2 ** 32 + lo;
}

/** Throws unless every adapter tensor is a `lora_a`/`lora_b` of a LoRA target of `cfg`. */
function checkAdapter(cfg: ModelConfig, adapter: NamedTensors, rank: number): void {
  const want = new Map<string, string>();
  for (const t of loraTargets(cfg)) {
    want.set(`${t.path}.lora_a`, `${t.inFeatures},${rank}`);
    want.set(`${t.path}.lora_b`, `${rank},${t.outFeatures}`);
  }
  for (const [name, t] of adapter) {
    const shape = want.get(name);
    if (!shape) throw new Error(`sampler: unexpected adapter tensor ${name}`);
    if (t.shape.join(",") !== shape) {
      throw new Error(`sampler: adapter ${name} has shape [${t.shape}], expected [${shape}]`);
    }
  }
}
