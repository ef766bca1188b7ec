/**
 * The learner: one training model of the local backend (a LoRA adapter over frozen base
 * weights, or the full base weights), with Tinker's forward_backward / optim_step semantics.
 *
 * - `forwardBackward` runs the model on the datums in micro-batches, computes the loss
 *   (losses.ts) and **adds** the gradient to an accumulator; `optimStep` applies AdamW to the
 *   accumulated gradient and clears it (gradients add up across calls, as on Tinker).
 * - The compute is ONNX Runtime running one graph per (model, loss, trainable, mode): the
 *   forward, the loss and the backward written out by hand (`../onnx/train_graph.ts`), with the
 *   weights as inputs, so new weights never rebuild a session. Weights, gradients and Adam's
 *   moments live on the host as float32 arrays (adam.ts), outside any engine's heap.
 *
 * @module
 */

import { UserInputError } from "../errors.ts";
import type { LoraSpec, ModelConfig } from "../model/config.ts";
import { checkBaseParameters, initLoraParameters } from "../model/params.ts";
import { hostTensor, type NamedTensors } from "../tensors.ts";
import type { TrainGraphSpec } from "../onnx/train_graph.ts";
import { runStep } from "../onnx/train_session.ts";
import {
  type AdamState,
  adamStateFromHost,
  adamStateToHost,
  adamStep,
  gradientOverflows,
  initAdamState,
} from "./adam.ts";
import { packMicroBatch, planMicroBatches } from "./batching.ts";
import { LOSSES, type LossFnName, resolveLossConfig } from "./losses.ts";
import { datumTail, gradientStart } from "./receptive.ts";
import {
  ADAM_DEFAULTS,
  type AdamParams,
  type ForwardBackwardResult,
  type LearnerDatum,
  type OptimizerState,
  type Trainable,
} from "./types.ts";
import { validateAdamParams, validateForwardBackward } from "./validate.ts";
import { collectResults, type MicroBatchResult, targetWidth } from "./results.ts";

/** Options of {@link Learner.create}. */
export interface LearnerOptions {
  config: ModelConfig;
  /** Base weights (copied for a full learner; kept, not modified, for a LoRA one). */
  base: NamedTensors;
  /** LoRA settings (rank, alpha, seed, targets); ignored when `trainable` is `"full"`. */
  lora: LoraSpec;
  /** Adapter weights to start from instead of a fresh LoRA init. */
  adapter?: NamedTensors;
  /** `"lora"` (default) trains the adapter; `"full"` trains the base weights, no LoRA. */
  trainable?: Trainable;
  /** Fixed tokens per micro-batch instead of the memory-derived budget (tests, tuning). */
  microBatchTokens?: number;
}

/** Options of {@link Learner.forwardBackward}. */
export interface ForwardBackwardOptions {
  /** `forward`: compute outputs and metrics but no gradient (nothing accumulates). */
  forwardOnly?: boolean;
}

/**
 * One training model. Not re-entrant: the server runs one operation per model at a time.
 *
 * @example
 * const learner = await Learner.create({ config, base, lora: LoraSpecSchema.parse({ rank: 8 }) });
 * const { metrics } = await learner.forwardBackward(datums, "cross_entropy", {});
 * await learner.optimStep({ learning_rate: 1e-3 });
 */
export class Learner {
  readonly config: ModelConfig;
  readonly trainable: Trainable;
  readonly #microBatchTokens?: number;
  readonly #graph: Omit<TrainGraphSpec, "loss" | "topK" | "mode">;
  /** The trained tensors (own copies), in canonical order. */
  #trained: NamedTensors;
  /** Frozen base weights of a LoRA learner (empty for a full one). */
  readonly #frozen: NamedTensors;
  #grads: Map<string, Float32Array>;
  /** Micro-batches whose gradient is in `#grads` since the last step. */
  #pending = 0;
  #adam: AdamState;

  private constructor(opts: LearnerOptions, trained: NamedTensors, frozen: NamedTensors) {
    this.config = opts.config;
    this.trainable = opts.trainable ?? "lora";
    this.#microBatchTokens = opts.microBatchTokens;
    this.#trained = copyTensors(trained);
    this.#frozen = frozen;
    const adapters: NonNullable<TrainGraphSpec["lora"]>["adapters"] = {};
    if (this.trainable === "lora") {
      for (const [name, a] of trained) {
        if (!name.endsWith(".lora_a")) continue;
        const path = name.slice(0, -".lora_a".length);
        const b = trained.get(`${path}.lora_b`)!;
        adapters[path] = { inF: a.shape[0], rank: a.shape[1], outF: b.shape[1] };
      }
    }
    this.#graph = {
      config: opts.config,
      trainable: this.trainable,
      ...(this.trainable === "lora"
        ? { lora: { scale: opts.lora.alpha / opts.lora.rank, adapters } }
        : {}),
    };
    this.#grads = zerosLike(this.#trained);
    this.#adam = initAdamState(this.#trained);
  }

  /**
   * Builds a learner: checks the base weights. A LoRA learner starts from `adapter` or from
   * the seeded LoRA init (B = 0, so it begins exactly at the base model).
   */
  static create(opts: LearnerOptions): Promise<Learner> {
    checkBaseParameters(opts.config, opts.base);
    if ((opts.trainable ?? "lora") === "full") {
      return Promise.resolve(new Learner(opts, opts.base, new Map()));
    }
    const fresh = initLoraParameters(opts.config, opts.lora);
    if (opts.adapter) checkSameLayout("adapter", fresh, opts.adapter);
    return Promise.resolve(
      new Learner(opts, ordered(opts.adapter ?? fresh, [...fresh.keys()]), opts.base),
    );
  }

  /** Optimizer steps taken (restored by {@link loadOptimizerState}). */
  get step(): number {
    return this.#adam.step;
  }

  /**
   * Tinker's forward_backward (or `forward` with `forwardOnly`): per-datum target log-probs
   * and metrics (`loss:sum` plus the loss's own, e.g. `clip_fraction:mean`). Validates the
   * request again (cheap) so that direct callers get the same errors as the server's. If a
   * micro-batch fails, the gradients accumulated before this call are kept and nothing of
   * this call is.
   */
  async forwardBackward(
    datums: readonly LearnerDatum[],
    lossFn: string,
    lossFnConfig: Readonly<Record<string, number>>,
    { forwardOnly = false }: ForwardBackwardOptions = {},
  ): Promise<ForwardBackwardResult> {
    validateForwardBackward(this.config, datums, lossFn, lossFnConfig);
    const name = lossFn as LossFnName;
    const k = targetWidth(datums);
    const spec: TrainGraphSpec = {
      ...this.#graph,
      loss: name,
      topK: k > 0,
      mode: forwardOnly ? "forward" : "train",
    };
    const config = resolveLossConfig(name, lossFnConfig);
    const starts = forwardOnly ? [] : datums.map((d) => gradientStart(this.config, d, name));
    if (!starts.some((s) => s > 0)) {
      const run = await this.#run(datums, spec, config);
      if (run.grads) this.#addGrads(run.grads, run.runs);
      return collectResults(run.results, datums, k, LOSSES[name]);
    }
    // A windowed model: the log-probs and the loss over every token, then the backward over
    // the tails that can carry a gradient (receptive.ts).
    const forward = await this.#run(datums, { ...spec, mode: "forward" }, config);
    const tails = datums.flatMap((d, i) =>
      starts[i] < d.tokens.length ? [datumTail(d, starts[i])] : []
    );
    if (tails.length > 0) {
      const train = await this.#run(tails, spec, config);
      this.#addGrads(train.grads!, train.runs);
    } else this.#pending += forward.runs; // a zero gradient still makes the next step a step

    return collectResults(forward.results, datums, k, LOSSES[name]);
  }

  /**
   * Runs `spec`'s graph over `datums` in micro-batches: their outputs and, for a training
   * graph, the sum of their gradients (not yet added to the learner's).
   */
  async #run(
    datums: readonly LearnerDatum[],
    spec: TrainGraphSpec,
    config: Readonly<Record<string, number>>,
  ): Promise<{ results: MicroBatchResult[]; grads?: Map<string, Float32Array>; runs: number }> {
    const k = spec.topK ? targetWidth(datums) : 0;
    const lengths = datums.map((d) => d.tokens.length);
    const plan = planMicroBatches(this.config, lengths, this.#microBatchTokens);
    const weights = [...this.#frozen, ...this.#trained];
    const results: MicroBatchResult[] = [];
    let grads: Map<string, Float32Array> | undefined;
    for (const mb of plan) {
      const packed = packMicroBatch(datums, mb, k, spec.loss !== "cross_entropy");
      const out = await runStep(spec, weights, packed, config);
      results.push({ mb, lp: out.lp, sums: out.sums });
      if (spec.mode === "forward") continue;
      if (!grads) grads = out.grads;
      else for (const [n, g] of out.grads) addInto(grads.get(n)!, g);
    }
    return { results, grads, runs: plan.length };
  }

  /** Adds one call's gradients (of `runs` micro-batches) to the accumulated ones. */
  #addGrads(grads: Map<string, Float32Array>, runs: number): void {
    for (const [n, g] of grads) addInto(this.#grads.get(n)!, g);
    this.#pending += runs;
  }

  /**
   * Tinker's optim_step: one AdamW step on the gradients accumulated since the last step,
   * then clears them. With nothing accumulated it changes nothing and does not count a
   * step, as torch.optim skips parameters without a gradient.
   *
   * @returns `grad_norm:mean` (global L2 norm before clipping) and `learning_rate:mean`;
   * colon keys, like forward_backward's, so any client that reduces metrics can.
   */
  optimStep(params: AdamParams): Promise<Record<string, number>> {
    validateAdamParams(params);
    const lr = params.learning_rate ?? ADAM_DEFAULTS.learning_rate;
    if (this.#pending === 0) {
      return Promise.resolve({ "grad_norm:mean": 0, "learning_rate:mean": lr });
    }
    // A gradient that overflows float32 (a reward of 1e30 does it) would turn weights into NaN
    // or freeze them, so such a step is refused and the model stays as it was.
    const norm = adamStep(this.#trained, this.#grads, this.#adam, params);
    this.#resetGrads();
    if (gradientOverflows(norm)) {
      return Promise.reject(
        new UserInputError(
          `optim_step: the gradient norm is ${norm} (the gradients overflowed float32: are the ` +
            `advantages or loss weights far too large?); the step was not applied and the ` +
            `accumulated gradients were dropped`,
        ),
      );
    }
    return Promise.resolve({ "grad_norm:mean": norm, "learning_rate:mean": lr });
  }

  /**
   * The trained weights, in canonical order: the LoRA adapter (`<path>.lora_a/.lora_b`) or,
   * for a full learner, all base weights. This is what sampler checkpoints store. A copy.
   */
  exportAdapter(): Promise<NamedTensors> {
    return Promise.resolve(copyTensors(this.#trained));
  }

  /**
   * Replaces the trained weights (same names and shapes); clears accumulated gradients.
   *
   * @throws {UserInputError} if the tensors do not match this learner's layout.
   */
  loadAdapter(weights: NamedTensors): void {
    checkSameLayout(this.trainable === "lora" ? "adapter" : "weights", this.#trained, weights);
    this.#trained = copyTensors(ordered(weights, [...this.#trained.keys()]));
    this.#resetGrads();
  }

  /** Adam's moments and step count, for `save_state`. */
  exportOptimizerState(): Promise<OptimizerState> {
    return Promise.resolve(adamStateToHost(this.#adam, this.#trained));
  }

  /** Restores Adam's moments and step count (from {@link exportOptimizerState}). */
  loadOptimizerState(state: OptimizerState): void {
    this.#adam = adamStateFromHost(this.#trained, state);
  }

  /** Drops the learner's arrays; the learner is unusable afterwards. */
  dispose(): void {
    this.#trained = new Map();
    this.#grads = new Map();
    this.#adam = { m: new Map(), v: new Map(), step: this.#adam.step };
  }

  #resetGrads(): void {
    for (const g of this.#grads.values()) g.fill(0);
    this.#pending = 0;
  }
}

/** `acc += x`. */
function addInto(acc: Float32Array, x: Float32Array): void {
  for (let i = 0; i < acc.length; i++) acc[i] += x[i];
}

/** Zeros with the names and sizes of `t`. */
function zerosLike(t: NamedTensors): Map<string, Float32Array> {
  return new Map([...t].map(([k, x]) => [k, new Float32Array(x.data.length)]));
}

/** Own copies of host tensors (the learner updates its trained tensors in place). */
function copyTensors(t: NamedTensors): NamedTensors {
  return new Map([...t].map(([k, x]) => [k, hostTensor(x.shape, Float32Array.from(x.data))]));
}

/** `tensors` re-keyed in `names` order. */
function ordered(tensors: NamedTensors, names: readonly string[]): NamedTensors {
  return new Map(names.map((n) => [n, tensors.get(n)!]));
}

/**
 * Throws a {@link UserInputError} unless `given` has exactly the tensors of `want` with the
 * same shapes (a checkpoint from another rank, target set or model).
 */
function checkSameLayout(
  what: string,
  want: ReadonlyMap<string, { shape: readonly number[] }>,
  given: NamedTensors,
): void {
  for (const [name, t] of want) {
    const g = given.get(name);
    if (!g) throw new UserInputError(`${what}: missing tensor ${name}`);
    if (g.shape.join() !== t.shape.join()) {
      throw new UserInputError(`${what}: ${name} has shape [${g.shape}], expected [${t.shape}]`);
    }
  }
  for (const name of given.keys()) {
    if (!want.has(name)) throw new UserInputError(`${what}: unexpected tensor ${name}`);
  }
}
