/**
 * The learner: one training model of the local backend (a LoRA adapter over frozen base
 * weights, or the full base weights), with Tinker's forward_backward / optim_step semantics.
 *
 * - `forwardBackward` runs the model on the datums in micro-batches, computes the loss
 *   (losses.ts) and **adds** the gradient to an accumulator; `optimStep` applies AdamW to the
 *   accumulated gradient and clears it (gradients add up across calls, as on Tinker).
 * - The compute is two module-level jitted functions (train and forward-only, step.ts) with
 *   the weights as arguments, so new weights never recompile; compiles happen once per
 *   (micro-batch shape, loss, model) and shapes are bucketed (batching.ts).
 * - Gradient accumulation happens inside the jitted train function and all device reads are
 *   deferred to the end of a call, so a micro-batch costs one dispatch and no host sync.
 *
 * @module
 */

import { blockUntilReady, type numpy as np, tree } from "@jax-js/jax";
import {
  disposeTree,
  initEngine,
  type ParamTree,
  readFloat32,
  toDevice,
  toHost,
} from "../engine.ts";
import { UserInputError } from "../errors.ts";
import type { LoraSpec, ModelConfig } from "../model/config.ts";
import { forwardSpec } from "../model/gpt.ts";
import { checkBaseParameters, initLoraParameters } from "../model/params.ts";
import type { NamedTensors } from "../tensors.ts";
import {
  type AdamState,
  adamStateFromHost,
  adamStateToHost,
  adamStep,
  initAdamState,
} from "./adam.ts";
import { packMicroBatch, planMicroBatches } from "./batching.ts";
import { LOSSES, type LossFnName, resolveLossConfig } from "./losses.ts";
import {
  blockBackwardProgram,
  blockProgram,
  type DeviceBatch,
  embedBackwardProgram,
  embedProgram,
  headForwardProgram,
  headTrainProgram,
  type Stage,
  stagesOf,
  type StepArgs,
  type StepOutputs,
  type StepStatics,
  toDeviceBatch,
  zerosLike,
} from "./step.ts";
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

/** Waits until `x` is computed, so that its program's buffers are free for the next one. */
function ready<T extends object>(x: T): Promise<T> {
  return blockUntilReady(x);
}

/** Options of {@link Learner.create}. */
export interface LearnerOptions {
  config: ModelConfig;
  /** Base weights (copied to the device; the map is not kept). */
  base: NamedTensors;
  /** LoRA settings (rank, alpha, seed, targets); ignored when `trainable` is `"full"`. */
  lora: LoraSpec;
  /** Adapter weights to start from instead of a fresh LoRA init. */
  adapter?: NamedTensors;
  /** `"lora"` (default) trains the adapter; `"full"` trains the base weights, no LoRA. */
  trainable?: Trainable;
  /** Fixed tokens per micro-batch instead of the heap-derived budget (tests, tuning). */
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
  readonly #statics: Omit<StepStatics, "lossFn">;
  readonly #microBatchTokens?: number;
  /** Canonical tensor order of the trained tree (jax-js may reorder object keys). */
  readonly #names: string[];
  #trained: ParamTree;
  #frozen: ParamTree;
  #grads: ParamTree;
  /** Micro-batches whose gradient is in `#grads` since the last step. */
  #pending = 0;
  #adam: AdamState;

  private constructor(opts: LearnerOptions, trained: NamedTensors, frozen: NamedTensors) {
    this.config = opts.config;
    this.trainable = opts.trainable ?? "lora";
    this.#microBatchTokens = opts.microBatchTokens;
    const lora = this.trainable === "lora" ? opts.lora : null;
    this.#statics = { ...forwardSpec(opts.config, lora), trainable: this.trainable };
    this.#names = [...trained.keys()];
    this.#trained = toDevice(trained);
    this.#frozen = toDevice(frozen);
    this.#grads = zerosLike(this.#trained);
    this.#adam = initAdamState(this.#trained);
  }

  /**
   * Builds a learner: checks the base weights, starts the engine and copies the weights to
   * the device. A LoRA learner starts from `adapter` or from the seeded LoRA init (B = 0,
   * so it begins exactly at the base model).
   */
  static async create(opts: LearnerOptions): Promise<Learner> {
    checkBaseParameters(opts.config, opts.base);
    await initEngine();
    if ((opts.trainable ?? "lora") === "full") return new Learner(opts, opts.base, new Map());
    const fresh = initLoraParameters(opts.config, opts.lora);
    if (opts.adapter) checkSameLayout("adapter", fresh, opts.adapter);
    return new Learner(opts, opts.adapter ?? fresh, opts.base);
  }

  /** Optimizer steps taken (restored by {@link loadOptimizerState}). */
  get step(): number {
    return this.#adam.step;
  }

  /**
   * Tinker's forward_backward (or `forward` with `forwardOnly`): per-datum target log-probs
   * and metrics (`loss:sum` plus the loss's own, e.g. `clip_fraction:mean`). Validates the
   * request again (cheap) so that direct callers get the same errors as the server's. If a
   * micro-batch fails (e.g. out of heap), the gradients accumulated before this call are kept
   * and nothing of this call is.
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
    const lengths = datums.map((d) => d.tokens.length);
    const plan = planMicroBatches(this.config, lengths, this.#microBatchTokens);
    const step: StepArgs = {
      config: resolveLossConfig(name, lossFnConfig),
      statics: { ...this.#statics, lossFn: name },
    };
    const saved = { grads: tree.ref(this.#grads), pending: this.#pending };
    const results: MicroBatchResult[] = [];
    try {
      for (const mb of plan) {
        const packed = packMicroBatch(datums, mb, k, name !== "cross_entropy");
        const out = await this.#runMicroBatch(toDeviceBatch(packed), step, forwardOnly);
        const [lp, sums] = await Promise.all([readFloat32(out.lp), readFloat32(out.sums)]);
        results.push({ mb, lp, sums });
      }
    } catch (e) {
      disposeTree(this.#grads);
      this.#grads = saved.grads;
      this.#pending = saved.pending;
      throw e;
    }
    disposeTree(saved.grads);
    return collectResults(results, datums, k, LOSSES[name]);
  }

  /**
   * Runs one micro-batch as a chain of stage programs (`step.ts` says why), waiting for each
   * before issuing the next so that it reuses the buffers the previous one freed. A training
   * pass adds its gradient to `#grads`.
   */
  async #runMicroBatch(
    batch: DeviceBatch,
    step: StepArgs,
    forwardOnly: boolean,
  ): Promise<StepOutputs> {
    const s = step.statics;
    const stages = stagesOf(this.#trained, this.#frozen, this.trainable);
    const refs = (st: Stage) => [tree.ref(st.trained), tree.ref(st.frozen)] as const;
    const full = this.trainable === "full";
    const { tokens, ...head } = batch;
    let x = await ready(embedProgram(...refs(stages.embed), full ? tokens.ref : tokens, s));
    const inputs: np.Array[] = [];
    for (const block of stages.blocks) {
      if (!forwardOnly) inputs.push(x.ref);
      x = await ready(blockProgram(...refs(block), x, s));
    }
    if (forwardOnly) {
      if (full) tokens.dispose();
      return await ready(headForwardProgram(...refs(stages.head), x, head, step.config, s));
    }
    // From here on `#grads` is rebuilt stage by stage (the caller keeps the old tree).
    this.#grads = { ...this.#grads };
    const out = await ready(
      headTrainProgram(...refs(stages.head), this.#takeGrads(""), x, head, step.config, s),
    );
    this.#putGrads("", out.acc);
    let dy = out.dx;
    for (let i = stages.blocks.length - 1; i >= 0; i--) {
      const prefix = `blocks.${i}.`;
      const r = await ready(
        blockBackwardProgram(...refs(stages.blocks[i]), this.#takeGrads(prefix), inputs[i], dy, s),
      );
      this.#putGrads(prefix, r.acc);
      dy = r.dx;
    }
    if (full) {
      const acc = this.#takeGrads("", ["wte.", "wpe."]);
      this.#putGrads(
        "",
        await ready(
          embedBackwardProgram(acc, tokens, dy, {
            vocab: this.config.vocabSize,
            context: this.config.maxSeqLen,
          }),
        ),
      );
    } else dy.dispose();
    this.#pending++;
    return { lp: out.lp, sums: out.sums };
  }

  /**
   * Removes and returns the accumulated gradients of one stage, under stage-local names: the
   * keys under `prefix` (a block) or, with `prefix` "", the top-level ones (of `only` if given,
   * else the head's).
   */
  #takeGrads(prefix: string, only = ["ln_f.", "lm_head."]): ParamTree {
    const out: ParamTree = {};
    for (const key of Object.keys(this.#grads)) {
      const local = prefix
        ? (key.startsWith(prefix) ? key.slice(prefix.length) : null)
        : only.some((o) => key.startsWith(o))
        ? key
        : null;
      if (local === null) continue;
      out[local] = this.#grads[key];
      delete this.#grads[key];
    }
    return out;
  }

  /** Puts a stage's gradients (stage-local names) back under `prefix`. */
  #putGrads(prefix: string, grads: ParamTree): void {
    for (const [k, v] of Object.entries(grads)) this.#grads[prefix + k] = v;
  }

  /**
   * Tinker's optim_step: one AdamW step on the gradients accumulated since the last step,
   * then clears them. With nothing accumulated it changes nothing and does not count a
   * step, as torch.optim skips parameters without a gradient.
   *
   * @returns `grad_norm:mean` (global L2 norm before clipping) and `learning_rate:mean`;
   * colon keys, like forward_backward's, so any client that reduces metrics can.
   */
  async optimStep(params: AdamParams): Promise<Record<string, number>> {
    validateAdamParams(params);
    const lr = params.learning_rate ?? ADAM_DEFAULTS.learning_rate;
    if (this.#pending === 0) return { "grad_norm:mean": 0, "learning_rate:mean": lr };
    // The old weights and moments are kept until the norm is read: a gradient that overflowed
    // float32 (a reward of 1e30 does it) would turn every weight into NaN, so such a step is
    // refused and the model stays as it was.
    const before = { trained: tree.ref(this.#trained), m: tree.ref(this.#adam.m) };
    const beforeV = tree.ref(this.#adam.v), beforeStep = this.#adam.step;
    const { params: trained, state, gradNorm } = adamStep(
      this.#trained,
      this.#grads,
      this.#adam,
      params,
    );
    const [norm] = await readFloat32(gradNorm);
    this.#grads = zerosLike(trained);
    this.#pending = 0;
    if (!Number.isFinite(norm)) {
      disposeTree(trained);
      disposeTree(state.m);
      disposeTree(state.v);
      this.#trained = before.trained;
      this.#adam = { m: before.m, v: beforeV, step: beforeStep };
      throw new UserInputError(
        `optim_step: the gradient norm is ${norm} (the gradients overflowed float32: are the ` +
          `advantages or loss weights far too large?); the step was not applied and the ` +
          `accumulated gradients were dropped`,
      );
    }
    disposeTree(before.trained);
    disposeTree(before.m);
    disposeTree(beforeV);
    this.#trained = trained;
    this.#adam = state;
    return { "grad_norm:mean": norm, "learning_rate:mean": lr };
  }

  /**
   * The trained weights, in canonical order: the LoRA adapter (`<path>.lora_a/.lora_b`) or,
   * for a full learner, all base weights. This is what sampler checkpoints store.
   */
  async exportAdapter(): Promise<NamedTensors> {
    return ordered(await toHost(this.#trained), this.#names);
  }

  /**
   * Replaces the trained weights (same names and shapes); clears accumulated gradients.
   *
   * @throws {UserInputError} if the tensors do not match this learner's layout.
   */
  loadAdapter(weights: NamedTensors): void {
    checkSameLayout(this.trainable === "lora" ? "adapter" : "weights", this.#hostLayout(), weights);
    disposeTree(this.#trained);
    this.#trained = toDevice(ordered(weights, this.#names));
    this.#resetGrads();
  }

  /** Adam's moments and step count, for `save_state`. */
  exportOptimizerState(): Promise<OptimizerState> {
    return adamStateToHost(this.#adam);
  }

  /** Restores Adam's moments and step count (from {@link exportOptimizerState}). */
  loadOptimizerState(state: OptimizerState): void {
    const next = adamStateFromHost(this.#trained, state);
    disposeTree(this.#adam.m);
    disposeTree(this.#adam.v);
    this.#adam = next;
  }

  /** Frees every device array; the learner is unusable afterwards. */
  dispose(): void {
    for (const t of [this.#trained, this.#frozen, this.#grads, this.#adam.m, this.#adam.v]) {
      disposeTree(t);
    }
  }

  #resetGrads(): void {
    disposeTree(this.#grads);
    this.#grads = zerosLike(this.#trained);
    this.#pending = 0;
  }

  /** Names and shapes of the trained tree, as an empty-data layout for checks. */
  #hostLayout(): Map<string, { shape: readonly number[] }> {
    return new Map(this.#names.map((n) => [n, { shape: this.#trained[n].shape }]));
  }
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
