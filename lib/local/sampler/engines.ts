/**
 * The two engines a {@link LocalSampler} can decode on, behind one interface: jax-js on its wasm
 * device (the learner's engine; `device.ts`, `generate.ts`) and ONNX Runtime on the host
 * (`../onnx/`, `host_generate.ts`). Both fold a LoRA adapter into the weights once and
 * return logprobs of the raw distribution; they differ by float rounding only.
 *
 * @module
 */

import { z } from "zod";
import type { ModelConfig } from "../model/config.ts";
import { disposeTree, initEngine, toDevice } from "../engine.ts";
import { forwardSpec } from "../model/gpt.ts";
import { foldLora, foldLoraOnHost } from "../model/lora.ts";
import { GptSession } from "../onnx/session.ts";
import type { NamedTensors } from "../tensors.ts";
import { generateGroup } from "./generate.ts";
import { type HostPrefixStore, runHostGroup } from "./host_generate.ts";
import { HOST_ENTRIES, type HostKvCache } from "./host_cache.ts";
import type { DecodeGroup } from "./plan.ts";
import { PrefixCache } from "./prefix_cache.ts";
import type { KvCache } from "./device.ts";
import type { JobState } from "./rows.ts";

/** Which engine decodes: `onnx` (ONNX Runtime, the default) or `jax` (jax-js). */
export const SamplerEngineSchema: z.ZodEnum<{ onnx: "onnx"; jax: "jax" }> = z.enum(["onnx", "jax"]);

/** A sampler engine's name. */
export type SamplerEngine = z.infer<typeof SamplerEngineSchema>;

/** The environment variable that picks the engine of samplers not told one. */
export const SAMPLER_ENGINE_ENV = "TINKERBENCH_SAMPLER_ENGINE";

/** The engine from `TINKERBENCH_SAMPLER_ENGINE`, else `onnx`. Throws on another value. */
export function defaultSamplerEngine(): SamplerEngine {
  const raw = Deno.env.get(SAMPLER_ENGINE_ENV);
  if (raw === undefined || raw === "") return "onnx";
  const parsed = SamplerEngineSchema.safeParse(raw);
  if (!parsed.success) {
    throw new Error(`${SAMPLER_ENGINE_ENV} must be "onnx" or "jax", got "${raw}"`);
  }
  return parsed.data;
}

/** A prefix cache of either engine's rows. */
export type AnyPrefixCache = PrefixCache | PrefixCache<HostKvCache>;

/**
 * An empty prefix cache of `bytes` for samplers on `engine`: jax-js rows stay on its device,
 * ONNX Runtime rows on the host.
 */
export function prefixCacheFor(engine: SamplerEngine, bytes: number): AnyPrefixCache {
  return engine === "onnx"
    ? new PrefixCache<HostKvCache>(bytes, HOST_ENTRIES)
    : new PrefixCache<KvCache>(bytes);
}

/** One set of weights loaded on an engine, running decode groups. */
export interface GroupRunner {
  /** Generates every row of `group` into `states`; stops at the next token once `signal` aborts. */
  run(states: JobState[], group: DecodeGroup, signal?: AbortSignal): Promise<void>;
  /** Frees the weights (and, for jax-js, the owner's prefix-cache entries). */
  free(): Promise<void>;
}

/** What an engine loads: base weights and an optional adapter with its scale. */
export interface EngineWeights {
  config: ModelConfig;
  base: NamedTensors;
  adapter: NamedTensors | null;
  lora: { alpha: number; rank: number } | null;
}

/** Loads the weights on jax-js's device; `prefix` is the owner's prefix cache, if any. */
export async function jaxRunner(
  w: EngineWeights,
  prefix?: { cache: PrefixCache; owner: object },
): Promise<GroupRunner> {
  await initEngine();
  // Fold the adapter into the base weights once: decoding then costs what the bare model
  // costs (about 25 % faster than applying A@B per token), same function up to rounding.
  const spec = forwardSpec(w.config, w.adapter ? w.lora : null);
  const [base, lora] = w.adapter
    ? foldLora(toDevice(w.base), toDevice(w.adapter), spec.loraScale)
    : [toDevice(w.base), {}];
  const weights = { base, lora, spec: forwardSpec(w.config, null) };
  return {
    run: (states, group, signal) => generateGroup(w.config, weights, states, group, prefix, signal),
    free: () => {
      disposeTree(base);
      disposeTree(lora);
      prefix?.cache.drop(prefix.owner);
      return Promise.resolve();
    },
  };
}

/**
 * Builds the ONNX graph with the adapter folded into its weights and loads it into an ONNX
 * Runtime session with one intra-op thread: decode steps are small, a second thread gave
 * nothing (`bench/results/local_engine.json`, docs/sampling-engine.md), and one leaves the
 * other core to the learner's wasm workers.
 */
export async function onnxRunner(
  w: EngineWeights,
  prefix?: HostPrefixStore,
): Promise<GroupRunner> {
  const spec = forwardSpec(w.config, w.adapter ? w.lora : null);
  const weights = w.adapter ? foldLoraOnHost(w.base, w.adapter, spec.loraScale) : w.base;
  const gpt = await GptSession.create(w.config, weights, { threads: 1 });
  return {
    run: (states, group, signal) => runHostGroup(gpt, states, group, prefix, signal),
    free: () => {
      prefix?.cache.drop(prefix.owner);
      return gpt.release();
    },
  };
}
