/**
 * The cases of the learner's reference fixture (`fixtures/learner_reference.json`): small
 * models, every loss, LoRA (folded and unfolded adapters) and full training. The fixture holds
 * what the jax-js learner (the learner before ONNX Runtime) computed on them, written by
 * `fixtures/make_learner_reference.ts`; `learner_reference_test.ts` checks that the learner
 * still computes the same.
 *
 * @module
 */

import {
  type LoraSpec,
  LoraSpecSchema,
  type ModelConfig,
  ModelConfigSchema,
} from "../../../lib/local/model/config.ts";
import { initBaseParameters, initLoraParameters } from "../../../lib/local/model/params.ts";
import type { NamedTensors } from "../../../lib/local/tensors.ts";
import type { AdamParams, LearnerDatum, Trainable } from "../../../lib/local/train/types.ts";
import { Rng } from "../../../lib/util/random.ts";

/** With eps ≫ |g| and no momentum an Adam step is −g/(|g| + 1): the delta shows the gradient. */
export const SGD_LIKE: AdamParams = { learning_rate: 1, eps: 1, beta1: 0, beta2: 0 };

/** The models: learned positions, and rotary positions with and without a window. */
export const MODELS: Record<string, ModelConfig> = {
  learned: ModelConfigSchema.parse({
    vocabSize: 24,
    dModel: 16,
    nLayers: 2,
    nHeads: 2,
    maxSeqLen: 16,
  }),
  rope: ModelConfigSchema.parse({
    vocabSize: 24,
    dModel: 16,
    nLayers: 2,
    nHeads: 2,
    maxSeqLen: 64,
    positions: "rope",
  }),
  window: ModelConfigSchema.parse({
    vocabSize: 24,
    dModel: 16,
    nLayers: 2,
    nHeads: 2,
    maxSeqLen: 64,
    positions: "rope",
    attentionWindow: 4,
  }),
};

/** One case: a model, what is trained, a loss and its config. */
export interface ReferenceCase {
  name: string;
  model: keyof typeof MODELS;
  trainable: Trainable;
  /** LoRA rank: 4 folds every adapter of these models into its weight, 1 folds none. */
  rank: number;
  loss: string;
  config: Record<string, number>;
  /** 2-D (top-K) cross-entropy targets. */
  topK?: boolean;
}

const LOSSES: Array<[string, Record<string, number>]> = [
  ["cross_entropy", {}],
  ["importance_sampling", {}],
  ["ppo", { clip_low_threshold: 0.9, clip_high_threshold: 1.1 }],
  ["cispo", { clip_low_threshold: 0.95, clip_high_threshold: 1.05 }],
  ["dro", { beta: 0.3 }],
];

/** Every case of the fixture. */
export const CASES: ReferenceCase[] = [
  ...(["lora", "full"] as const).flatMap((trainable) =>
    LOSSES.map(([loss, config]): ReferenceCase => ({
      name: `learned ${trainable} ${loss}`,
      model: "learned",
      trainable,
      rank: 4,
      loss,
      config,
    }))
  ),
  ...(["lora", "full"] as const).map((trainable): ReferenceCase => ({
    name: `learned ${trainable} cross_entropy top-K`,
    model: "learned",
    trainable,
    rank: 4,
    loss: "cross_entropy",
    config: {},
    topK: true,
  })),
  {
    name: "learned lora rank 1 cross_entropy",
    model: "learned",
    trainable: "lora",
    rank: 1,
    loss: "cross_entropy",
    config: {},
  },
  ...(["rope", "window"] as const).flatMap((model) =>
    (["lora", "full"] as const).map((trainable): ReferenceCase => ({
      name: `${model} ${trainable} ppo`,
      model,
      trainable,
      rank: 4,
      loss: "ppo",
      config: { clip_low_threshold: 0.9, clip_high_threshold: 1.1 },
    }))
  ),
];

/** The LoRA spec of a case. */
export function loraOf(c: ReferenceCase): LoraSpec {
  return LoraSpecSchema.parse({ rank: c.rank, alpha: 2 * c.rank, seed: 3 });
}

/** The base weights of a case's model. */
export function baseOf(c: ReferenceCase): NamedTensors {
  return initBaseParameters(MODELS[c.model], 11);
}

/** A LoRA adapter with non-zero B, so that every adapter tensor gets a gradient. */
export function adapterOf(c: ReferenceCase): NamedTensors {
  const rng = new Rng(c.rank);
  const out = initLoraParameters(MODELS[c.model], loraOf(c));
  for (const [name, t] of out) {
    if (name.endsWith("lora_b")) {
      out.set(name, { shape: t.shape, data: rng.normalArray(t.data.length, 0.3) });
    }
  }
  return out;
}

/**
 * The datums of a case: rows of different lengths (so padding is exercised), real-valued
 * weights with zeros, and for RL losses sampler log-probs `lp + noise` from `lp` (the model's
 * own) so that ratios are off 1 and some clip, and advantages of both signs with zeros.
 */
export function datumsOf(c: ReferenceCase, lp?: Float32Array[]): LearnerDatum[] {
  const cfg = MODELS[c.model];
  const lengths = c.model === "learned" ? [16, 9, 4] : [40, 23];
  const rng = new Rng(100);
  const k = c.topK ? 3 : 0;
  return lengths.map((n, row): LearnerDatum => {
    const tokens = Int32Array.from({ length: n }, () => rng.int(cfg.vocabSize));
    const width = Math.max(1, k);
    const targets = Int32Array.from({ length: n * width }, () => rng.int(cfg.vocabSize));
    const weights = Float32Array.from(
      { length: n * width },
      (_, i) => i % 7 === 3 ? 0 : rng.uniform() - 0.2,
    );
    const shape = k ? [n, k] : [n];
    if (c.loss === "cross_entropy") {
      return {
        tokens,
        inputs: { target_tokens: { shape, data: targets }, weights: { shape, data: weights } },
      };
    }
    const logprobs = Float32Array.from(
      { length: n },
      (_, i) => (lp ? lp[row][i] : -3) + 0.2 * rng.normal(),
    );
    const advantages = Float32Array.from({ length: n }, (_, i) => i % 5 === 1 ? 0 : rng.normal());
    return {
      tokens,
      inputs: {
        target_tokens: { shape, data: targets },
        weights: { shape, data: weights.map((w) => w === 0 ? 0 : 1) },
        logprobs: { shape, data: logprobs },
        advantages: { shape, data: advantages },
      },
    };
  });
}

/** What the fixture stores per case (float arrays as base64 little-endian float32). */
export interface ReferenceResult {
  name: string;
  /** Each datum's forward log-probs, concatenated. */
  logprobs: string;
  /** forward_backward's metrics. */
  metrics: Record<string, number>;
  /** Trained weights after minus before one {@link SGD_LIKE} step, canonical order. */
  delta: string;
}

/** Float32 array to base64. */
export function encodeFloats(x: Float32Array): string {
  let s = "";
  const bytes = new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

/** Base64 to a float32 array. */
export function decodeFloats(s: string): Float32Array {
  const bin = atob(s);
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  return new Float32Array(bytes.buffer);
}

/** What one case computes: forward log-probs, forward_backward's metrics, the step's delta. */
export interface CaseOutputs {
  logprobs: Float32Array;
  metrics: Record<string, number>;
  delta: Float32Array;
}

/** Runs a case on a fresh learner: a forward, then a forward_backward and one step. */
export async function runCase(c: ReferenceCase): Promise<CaseOutputs> {
  const { Learner } = await import("../../../lib/local/train/learner.ts");
  const learner = await Learner.create({
    config: MODELS[c.model],
    base: baseOf(c),
    lora: loraOf(c),
    adapter: c.trainable === "lora" ? adapterOf(c) : undefined,
    trainable: c.trainable,
  });
  const probe = datumsOf(c).map((d) => ({
    tokens: d.tokens,
    inputs: { target_tokens: d.inputs.target_tokens, weights: d.inputs.weights },
  }));
  const fwd = await learner.forwardBackward(probe, "cross_entropy", {}, { forwardOnly: true });
  const lp = fwd.outputs.map((o) => o.logprobs.data);
  const datums = c.loss === "cross_entropy" ? probe : datumsOf(c, lp);
  const flat = (t: NamedTensors) => Float32Array.from([...t.values()].flatMap((x) => [...x.data]));
  const before = flat(await learner.exportAdapter());
  const { metrics } = await learner.forwardBackward(datums, c.loss, c.config);
  await learner.optimStep(SGD_LIKE);
  const after = flat(await learner.exportAdapter());
  learner.dispose();
  return {
    logprobs: Float32Array.from(lp.flatMap((x) => [...x])),
    metrics,
    delta: after.map((x, i) => x - before[i]),
  };
}
