/**
 * The samplers of the local backend, one per set of weights (a base model, a saved checkpoint
 * or an in-memory snapshot), kept in a small most-recently-used cache since each holds a copy
 * of its weights on the device. All of them share one optional prefix cache.
 *
 * @module
 */

import { loadBaseWeights, type LocalModelSpec } from "../models.ts";
import type { LoraSpec } from "../model/config.ts";
import type { NamedTensors } from "../tensors.ts";
import type { CheckpointStore } from "../checkpoints.ts";
import type { Trainable } from "../train/mod.ts";
import {
  type AnyPrefixCache,
  LocalSampler,
  type PrefixCache,
  prefixCacheFor,
  type SamplerEngine,
} from "../sampler/mod.ts";
import { parseTinkerPath } from "../../protocol/paths.ts";

/** Where a sampler's weights come from. */
export type SamplerWeights =
  | { kind: "base" }
  | { kind: "checkpoint"; path: string }
  | {
    kind: "snapshot";
    /** Unique per snapshot: the cache key of its sampler. */
    key: string;
    weights: NamedTensors;
    lora: LoraSpec;
    trainable: Trainable;
  };

/** Options of a {@link SamplerCache}. */
export interface SamplerCacheOptions {
  /** Where `checkpoint` weights are loaded from. */
  checkpoints: CheckpointStore;
  /** Most samplers kept at once; the least recently used one is freed first. */
  maxSamplers: number;
  /** Bytes of the shared prefix cache; 0 turns it off. */
  prefixCacheBytes: number;
  /** The engine every sampler decodes on. */
  engine: SamplerEngine;
}

/**
 * Samplers by weights, made on first use.
 *
 * @example
 * const cache = new SamplerCache({ checkpoints, maxSamplers: 8, prefixCacheBytes: 0, engine: "onnx" });
 * const sampler = await cache.get(spec, { kind: "base" });
 */
export class SamplerCache {
  readonly #samplers = new Map<string, Promise<LocalSampler>>();
  readonly #checkpoints: CheckpointStore;
  readonly #maxSamplers: number;
  readonly #prefixCache?: AnyPrefixCache;
  /** The engine every sampler decodes on. */
  readonly engine: SamplerEngine;

  constructor(opts: SamplerCacheOptions) {
    this.engine = opts.engine;
    this.#checkpoints = opts.checkpoints;
    this.#maxSamplers = opts.maxSamplers;
    // Each engine keeps its rows its own way: device arrays (jax-js) or host arrays (ONNX).
    this.#prefixCache = opts.prefixCacheBytes > 0
      ? prefixCacheFor(opts.engine, opts.prefixCacheBytes)
      : undefined;
  }

  /** The prefix cache's entries, bytes, hits, misses and prompt tokens not run again. */
  prefixCacheStats(): PrefixCache["stats"] | null {
    return this.#prefixCache?.stats ?? null;
  }

  /** The sampler of `weights`, made (and an older one freed) if it is not cached. */
  get(spec: LocalModelSpec, weights: SamplerWeights): Promise<LocalSampler> {
    const key = samplerKey(spec, weights);
    const hit = this.#samplers.get(key);
    if (hit) {
      // Re-insert to mark as most recently used.
      this.#samplers.delete(key);
      this.#samplers.set(key, hit);
      return hit;
    }
    const made = this.#make(spec, weights);
    made.catch(() => this.#samplers.delete(key));
    this.#samplers.set(key, made);
    while (this.#samplers.size > this.#maxSamplers) {
      const [oldKey, old] = this.#samplers.entries().next().value!;
      this.#samplers.delete(oldKey);
      old.then((s) => s.dispose(), () => {});
    }
    return made;
  }

  /** Frees every sampler. */
  async close(): Promise<void> {
    for (const s of this.#samplers.values()) (await s.catch(() => undefined))?.dispose();
    this.#samplers.clear();
  }

  async #make(spec: LocalModelSpec, weights: SamplerWeights): Promise<LocalSampler> {
    const base = await loadBaseWeights(spec);
    const prefixCache = this.#prefixCache;
    const engine = this.engine;
    if (weights.kind === "base") {
      return await LocalSampler.create({
        config: spec.config,
        base,
        adapter: null,
        lora: null,
        prefixCache,
        engine,
      });
    }
    let adapter: NamedTensors, lora: LoraSpec, trainable: Trainable;
    if (weights.kind === "snapshot") ({ weights: adapter, lora, trainable } = weights);
    else {
      const { meta, tensors } = await this.#checkpoints.load(parseTinkerPath(weights.path));
      ({ lora, trainable } = meta);
      adapter = tensors.weights;
    }
    // Fully trained weights replace the base; a LoRA adapter goes on top of it.
    if (trainable === "full") {
      return await LocalSampler.create({
        config: spec.config,
        base: adapter,
        adapter: null,
        lora: null,
        prefixCache,
        engine,
      });
    }
    return await LocalSampler.create({
      config: spec.config,
      base,
      adapter,
      lora,
      prefixCache,
      engine,
    });
  }
}

/**
 * The cache key of a sampler, also the compute queue's batching key: requests on the same
 * weights run as one batch.
 */
export function samplerKey(spec: LocalModelSpec, w: SamplerWeights): string {
  return `${spec.name}|${w.kind === "base" ? "base" : w.kind === "checkpoint" ? w.path : w.key}`;
}
