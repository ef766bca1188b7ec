/**
 * The training models of the local backend, one {@link Learner} each: creating and unloading
 * them, and their operations (forward_backward, optim_step, saving and loading weights), which
 * run in each model's seq-id order on the compute queue.
 *
 * @module
 */

import { UserInputError } from "../errors.ts";
import type { CheckpointStore } from "../checkpoints.ts";
import type { FutureKind } from "../runtime/futures.ts";
import type { Requests } from "../runtime/requests.ts";
import {
  type AdamParams,
  type Learner,
  type LearnerDatum,
  validateAdamParams,
  validateForwardBackward,
} from "../train/mod.ts";
import {
  checkCheckpointName,
  formatTinkerPath,
  parseTinkerPath,
  type TinkerPath,
} from "../../protocol/paths.ts";
import type * as wire from "../../protocol/mod.ts";
import type { ClientSession, ClientSessions } from "./sessions.ts";
import type { SamplingService } from "./sampling.ts";
import {
  checkCompatible,
  checkpointMeta,
  loadLearner,
  type NewTrainingModel,
  newTrainingModel,
  type TrainingModel,
} from "./training_model.ts";
import { toForwardBackwardOutput, toLoraSpec, toModelSpec, toTrainable } from "./wire.ts";
import { trimNativeHeap } from "../native_heap.ts";

/** Options of {@link TrainingModels}. */
export interface TrainingModelsOptions {
  sessions: ClientSessions;
  checkpoints: CheckpointStore;
  requests: Requests;
  /** Takes the in-memory snapshots of save_weights_for_sampler without a path. */
  sampling: SamplingService;
  /** How long a seq-id gap may block a model before the sequence moves on. */
  seqGapTimeoutMs: number;
}

/** A forward or forward_backward request, its datums already translated. */
export interface ForwardBackwardRequest {
  model_id: string;
  seq_id?: number | null;
  data: LearnerDatum[];
  loss_fn: string;
  loss_fn_config?: Record<string, number> | null;
}

/**
 * The training models and their operations. Each operation returns a request id at once; its
 * future settles when the model's earlier operations (by seq id) have run.
 *
 * @example
 * const requestId = models.createModel({ session_id, model_seq_id: 0, base_model: "local/tiny" });
 */
export class TrainingModels {
  readonly #models = new Map<string, TrainingModel>();
  readonly #opts: TrainingModelsOptions;

  constructor(opts: TrainingModelsOptions) {
    this.#opts = opts;
  }

  /** Creates a LoRA training model; the future resolves once its weights are loaded. */
  createModel(req: wire.CreateModelRequest): string {
    const session = this.#opts.sessions.get(req.session_id);
    const spec = toModelSpec(req.base_model);
    const lora = toLoraSpec(req.lora_config);
    const id = `${session.id}:train:${req.model_seq_id}`;
    if (this.#models.has(id)) {
      throw new UserInputError(
        `model_seq_id ${req.model_seq_id} was already used in this session`,
        409,
      );
    }
    const trainable = toTrainable(req.user_metadata);
    const userMetadata = req.user_metadata ?? {};
    const model = this.#add(session, { id, spec, lora, trainable, userMetadata });
    return this.#opts.requests.run("create_model", async () => {
      await loadLearner(model, this.#opts.checkpoints);
      return { type: "create_model", model_id: id };
    });
  }

  /** The model `id`; an unknown id is a 404. Keeps the model's session alive. */
  model(id: string): TrainingModel {
    const m = this.#models.get(id);
    if (!m) throw new UserInputError(`unknown model_id ${JSON.stringify(id)}`, 404);
    this.#opts.sessions.touch(m.sessionId);
    return m;
  }

  /** Unloads a model and frees its memory. */
  unloadModel(modelId: string): string {
    this.model(modelId);
    return this.#opts.requests.run("unload_model", () => {
      this.drop(modelId);
      return Promise.resolve({ type: "unload_model", model_id: modelId });
    });
  }

  /** Queues a forward or forward_backward pass (in seq order). */
  forwardBackward(req: ForwardBackwardRequest, forwardOnly: boolean, print: string): string {
    const m = this.model(req.model_id);
    const cfg = req.loss_fn_config ?? {};
    return this.#submit(m, req.seq_id, print, "forward_backward", () => {
      validateForwardBackward(m.spec.config, req.data, req.loss_fn, cfg);
    }, async (learner) => {
      const out = await learner.forwardBackward(req.data, req.loss_fn, cfg, { forwardOnly });
      return toForwardBackwardOutput(out);
    });
  }

  /** Queues an Adam step over the accumulated gradients. */
  optimStep(
    req: { model_id: string; seq_id?: number | null; adam_params: AdamParams },
    print: string,
  ): string {
    const m = this.model(req.model_id);
    const validate = () => validateAdamParams(req.adam_params);
    return this.#submit(m, req.seq_id, print, "optim_step", validate, async (learner) => {
      const metrics = await learner.optimStep(req.adam_params);
      // A step's buffers are all freed by now: give their memory back (native_heap.ts).
      trimNativeHeap();
      return { type: "optim_step", metrics };
    });
  }

  /** Queues save_state: weights and optimizer state under `weights/<name>`. */
  saveWeights(req: wire.SaveWeightsRequest, print: string): string {
    const m = this.model(req.model_id);
    const name = req.path ?? `ckpt-${Date.now()}`;
    const validate = () => checkCheckpointName(name);
    return this.#submit(m, req.seq_id, print, "save_weights", validate, async (l) => {
      const path: TinkerPath = { runId: m.id, kind: "weights", name };
      await this.#opts.checkpoints.save(
        path,
        { weights: await l.exportAdapter(), optimizer: await l.exportOptimizerState() },
        checkpointMeta(m, l),
        { ttlSeconds: req.ttl_seconds, overwrite: req.overwrite ?? false },
      );
      await this.#touchRun(m);
      return { type: "save_weights", path: formatTinkerPath(path) };
    });
  }

  /**
   * Queues save_weights_for_sampler. Named: written under `sampler_weights/<name>`. Unnamed
   * (`sampling_session_seq_id` set): an in-memory snapshot with a new sampling session, as the
   * service makes for `save_weights_and_get_sampling_client`.
   */
  saveWeightsForSampler(req: wire.SaveWeightsForSamplerRequest, print: string): string {
    const m = this.model(req.model_id);
    const name = req.path;
    const samplingSessionSeqId = req.sampling_session_seq_id;
    if (name == null && samplingSessionSeqId == null) {
      throw new UserInputError(
        "save_weights_for_sampler needs a path or a sampling_session_seq_id",
      );
    }
    return this.#submit(m, req.seq_id, print, "save_weights_for_sampler", () => {
      if (name != null) checkCheckpointName(name);
    }, async (l) => {
      const weights = await l.exportAdapter();
      if (name != null) {
        const path: TinkerPath = { runId: m.id, kind: "sampler_weights", name };
        await this.#opts.checkpoints.save(path, { weights }, checkpointMeta(m, l), {
          ttlSeconds: req.ttl_seconds,
        });
        await this.#touchRun(m);
        return { type: "save_weights_for_sampler", path: formatTinkerPath(path) };
      }
      const id = this.#opts.sampling.addSnapshot({
        modelId: m.id,
        sessionId: m.sessionId,
        samplingSessionSeqId: samplingSessionSeqId!,
        spec: m.spec,
        weights,
        lora: m.lora,
        trainable: m.trainable,
      });
      await this.#opts.sampling.warm(id);
      return { type: "save_weights_for_sampler", path: null, sampling_session_id: id };
    });
  }

  /**
   * Queues load_weights. Only allowed as a model's first operation, as on the service;
   * `optimizer` also restores Adam's state.
   */
  loadWeights(req: wire.LoadWeightsRequest, print: string): string {
    if (req.model_id == null) return this.#createViaLoad(req);
    const m = this.model(req.model_id);
    const path = parseTinkerPath(req.path);
    if (path.kind !== "weights") {
      throw new UserInputError(`load_weights needs a weights/ checkpoint, got ${req.path}`);
    }
    const { dedupe } = this.#opts.requests;
    // First by seq id, not by arrival: a client's POSTs may arrive in any order (the server
    // runs them in seq-id order), so a load numbered 1 is first even if seq 2 came in before.
    const first = req.seq_id != null && req.seq_id > 0 ? req.seq_id === 1 : m.submitted === 0;
    if (!first && dedupe.lookup(m.id, req.seq_id ?? -1, print) === undefined) {
      throw new UserInputError(
        "load_weights must be the model's first operation after create_model; create a new " +
          "training client from the checkpoint instead",
      );
    }
    return this.#submit(m, req.seq_id, print, "load_weights", () => {}, async (l) => {
      const { meta, tensors } = await this.#opts.checkpoints.load(path, {
        optimizer: req.optimizer,
      });
      checkCompatible(meta, m);
      await l.loadAdapter(tensors.weights);
      if (req.optimizer && tensors.optimizer) await l.loadOptimizerState(tensors.optimizer);
      return { type: "load_weights", path: req.path, model_id: m.id };
    });
  }

  /** Frees model `id` now (no-op when it is gone). */
  drop(id: string): void {
    const m = this.#models.get(id);
    if (!m) return;
    m.order.close();
    m.learner?.dispose();
    this.#models.delete(id);
    this.#opts.requests.dedupe.forget(id);
    this.#opts.sampling.forgetModel(id);
  }

  /** Frees models after the work queued before them (their session expired). */
  dropQueued(ids: Iterable<string>): void {
    for (const id of ids) this.#opts.requests.queue.push(() => Promise.resolve(this.drop(id)));
  }

  /** Frees every model now. */
  dropAll(): void {
    for (const id of [...this.#models.keys()]) this.drop(id);
  }

  #add(session: ClientSession, m: NewTrainingModel): TrainingModel {
    const model = newTrainingModel(session.id, m, this.#opts.seqGapTimeoutMs);
    this.#models.set(model.id, model);
    session.models.add(model.id);
    return model;
  }

  /**
   * Accepts an operation of model `m`: deduped by seq id, validated, then run once the
   * model's earlier operations have.
   */
  #submit(
    m: TrainingModel,
    seqId: number | null | undefined,
    print: string,
    kind: FutureKind,
    validate: () => void,
    work: (learner: Learner) => Promise<unknown>,
  ): string {
    const seq = seqId ?? 0;
    const { futures, queue } = this.#opts.requests;
    return this.#opts.requests.accept({
      key: m.id,
      seqId: seq > 0 ? seq : undefined,
      print,
      kind,
      validate,
      schedule: (requestId) => {
        m.submitted++;
        m.order.enqueue(seq, () =>
          queue.push(() =>
            futures.settleWith(requestId, async () => {
              if (!this.#models.has(m.id)) {
                throw new UserInputError(`model ${m.id} was unloaded`, 404);
              }
              if (!m.learner) {
                throw new Error(`model ${m.id} failed to load: ${String(m.loadError)}`);
              }
              return await work(m.learner);
            })
          ));
      },
    });
  }

  /** The create-via-load addressing: one load_weights that creates the model from a checkpoint. */
  #createViaLoad(req: wire.LoadWeightsRequest): string {
    if (req.session_id == null || req.model_seq_id == null) {
      throw new UserInputError("load_weights needs model_id, or session_id with model_seq_id");
    }
    const session = this.#opts.sessions.get(req.session_id);
    const path = parseTinkerPath(req.path);
    const id = `${session.id}:train:${req.model_seq_id}`;
    return this.#opts.requests.run("load_weights", async () => {
      const { checkpoints } = this.#opts;
      const { meta, tensors } = await checkpoints.load(path, { optimizer: req.optimizer });
      const spec = toModelSpec(req.base_model ?? meta.base_model);
      const userMetadata = req.user_metadata ?? {};
      const m = this.#add(session, {
        id,
        spec,
        lora: meta.lora,
        trainable: meta.trainable,
        userMetadata,
      });
      await loadLearner(m, this.#opts.checkpoints);
      await m.learner!.loadAdapter(tensors.weights);
      if (req.optimizer && tensors.optimizer) {
        await m.learner!.loadOptimizerState(tensors.optimizer);
      }
      return { type: "load_weights", path: req.path, model_id: id };
    });
  }

  async #touchRun(m: TrainingModel): Promise<void> {
    const { checkpoints } = this.#opts;
    const run = await checkpoints.getRun(m.id);
    if (run) await checkpoints.saveRun({ ...run, last_request_time: new Date().toISOString() });
  }
}
