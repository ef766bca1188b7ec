/**
 * The learner's ONNX Runtime sessions: one per training-graph spec (`train_graph.ts`), built on
 * first use and kept for the process (a spec is a model, a loss and a mode, so there are few),
 * and the run of one micro-batch on host arrays.
 *
 * @module
 */

import * as ort from "onnxruntime-node";
import { buildTrainGraph, trainedNames, type TrainGraphSpec } from "./train_graph.ts";

/**
 * ONNX Runtime's intra-op threads for the learner: one per core, at most two (the machine this
 * is measured on has two). Its threads do not spin while waiting for work: on this shared
 * machine (load 12) spinning doubled a step (full, local/bench: about 1,050 against 520 ms
 * with two threads, 450 to 550 with one).
 */
export const LEARNER_THREADS = Math.max(1, Math.min(2, navigator.hardwareConcurrency));

const sessions = new Map<string, Promise<ort.InferenceSession>>();

/** The session of `spec`, built once per process. */
export function trainSession(spec: TrainGraphSpec): Promise<ort.InferenceSession> {
  const key = JSON.stringify(spec);
  let s = sessions.get(key);
  if (!s) {
    s = ort.InferenceSession.create(buildTrainGraph(spec), {
      graphOptimizationLevel: "all",
      executionMode: "sequential",
      intraOpNumThreads: LEARNER_THREADS,
      extra: { session: { intra_op: { allow_spinning: "0" } } },
    });
    s.catch(() => sessions.delete(key));
    sessions.set(key, s);
  }
  return s;
}

/** One micro-batch's host arrays; per-token arrays have `shape` (`[B, T]` or `[B, T, K]`). */
export interface StepBatch {
  /** `[B, T]` token ids. */
  tokens: Int32Array;
  targets: Int32Array;
  weights: Float32Array;
  logprobs?: Float32Array;
  advantages?: Float32Array;
  shape: number[];
}

/** What one run of a training or forward graph returns for a micro-batch. */
export interface MicroBatchOutputs {
  /** Target log-probs, `shape`. */
  lp: Float32Array;
  /** `[loss, ...stats]`. */
  sums: Float32Array;
  /** The trained tensors' gradients (training graphs only), by name. */
  grads: Map<string, Float32Array>;
}

/**
 * Runs `spec`'s graph on one micro-batch with `weights` (every base weight and, for a LoRA
 * learner, every adapter tensor; host arrays are passed without a copy) and the loss's
 * config values.
 */
export async function runStep(
  spec: TrainGraphSpec,
  weights: Iterable<[string, { shape: readonly number[]; data: Float32Array }]>,
  batch: StepBatch,
  config: Readonly<Record<string, number>>,
): Promise<MicroBatchOutputs> {
  const session = await trainSession(spec);
  const [b, t] = batch.shape;
  const f32 = (data: Float32Array, shape: readonly number[]) =>
    new ort.Tensor("float32", data, shape as number[]);
  const feeds: Record<string, ort.Tensor> = {
    tokens: new ort.Tensor("int64", toInt64(batch.tokens), [b, t]),
    targets: new ort.Tensor("int64", toInt64(batch.targets), batch.shape),
    weights: f32(batch.weights, batch.shape),
  };
  if (spec.loss !== "cross_entropy") {
    feeds.sampler_logprobs = f32(batch.logprobs!, [b, t]);
    feeds.advantages = f32(batch.advantages!, [b, t]);
  }
  for (const [k, v] of Object.entries(config)) feeds[`config.${k}`] = f32(Float32Array.of(v), []);
  for (const [name, w] of weights) feeds[name] = f32(w.data, w.shape);
  const out = await session.run(feeds);
  const grads = new Map<string, Float32Array>();
  if (spec.mode === "train") {
    for (const name of trainedNames(spec)) {
      grads.set(name, out[`grad.${name}`].data as Float32Array);
    }
  }
  return {
    lp: out.logprobs.data as Float32Array,
    sums: out.sums.data as Float32Array,
    grads,
  };
}

function toInt64(x: Int32Array): BigInt64Array {
  const out = new BigInt64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = BigInt(x[i]);
  return out;
}
