/**
 * The local backend's state and operations, independent of HTTP: sessions, training models
 * (one {@link Learner} each), sampling sessions (a {@link Sampler} per set of weights),
 * checkpoints, futures and request ordering. The HTTP app in `server/` is a thin layer that
 * validates bodies and calls these methods.
 *
 * @module
 */

import { UserInputError } from "./errors.ts";
import { findLocalModel, loadBaseWeights, localModelNames, type LocalModelSpec } from "./models.ts";
import { type LoraSpec, LoraSpecSchema } from "./model/config.ts";
import type { NamedTensors } from "./tensors.ts";
import {
  type CheckpointInfo,
  type CheckpointMeta,
  CheckpointStore,
  type RunInfo,
} from "./checkpoints.ts";
import {
  checkCheckpointName,
  formatTinkerPath,
  parseTinkerPath,
  type TinkerPath,
} from "../protocol/paths.ts";
import { type FutureKind, type FutureState, FutureStore } from "./server/futures.ts";
import { ComputeQueue } from "./server/compute_queue.ts";
import { RetryDedupe, SeqOrder } from "./server/sequencer.ts";
import {
  type AdamParams,
  Learner,
  type LearnerDatum,
  validateAdamParams,
  validateForwardBackward,
} from "./train/mod.ts";
import {
  PrefixCache,
  type SampleJob,
  Sampler,
  type SampleResult,
  validateSampleJob,
} from "./sampler/mod.ts";
import { ByteTokenizer } from "../tokenizers/byte.ts";
import type * as wire from "../protocol/mod.ts";

/** Options of a {@link LocalBackend}. */
export interface LocalBackendOptions {
  /** Where checkpoints and run records live. */
  dataDir: string;
  /** How long a session lives without a heartbeat before its models are unloaded (0 = never). */
  sessionTtlMs?: number;
  /** How long a seq-id gap may block a model before the sequence moves on. */
  seqGapTimeoutMs?: number;
  /** Most sampler weight sets kept in memory at once. */
  maxCachedSamplers?: number;
  /**
   * Device bytes for the samplers' prefix cache (keys and values of earlier turns, reused by
   * prompts that extend them, so a multi-turn episode prefills only each turn's new tokens);
   * 0, the default, turns it off. At 192 MiB (about three waves of 32 GuessTheNumber episodes)
   * it made rollouts on `local/games` 1.58× faster with 32 episodes in flight (`deno task bench
   * rollout`; no change with one). It stays opt-in because, with a learner in the same process,
   * the learning benchmark then ran out of the 4 GiB wasm heap at its 12th step: jax-js's
   * allocator keeps every distinct buffer size it has seen (`shapes.ts`), and the cache adds
   * many: over 12 waves of 32 episodes the process grew to 2.7 GiB with it and settled at
   * 1.8 GiB without (`bench/heap_probe.ts rollouts 192` against `rollouts 0`).
   */
  prefixCacheBytes?: number;
}

/** What a {@link LocalBackend} uses for the options it is not given. */
export const LOCAL_BACKEND_DEFAULTS: Required<Omit<LocalBackendOptions, "dataDir">> = {
  sessionTtlMs: 300_000,
  seqGapTimeoutMs: 30_000,
  maxCachedSamplers: 8,
  prefixCacheBytes: 0,
};

interface Session {
  id: string;
  tags: string[];
  userMetadata: Record<string, string>;
  lastSeen: number;
  models: Set<string>;
  samplingSessions: Set<string>;
}

interface TrainingModel {
  id: string;
  sessionId: string;
  spec: LocalModelSpec;
  lora: LoraSpec;
  trainable: "lora" | "full";
  userMetadata: Record<string, string>;
  order: SeqOrder;
  submitted: number;
  learner?: Learner;
  loadError?: unknown;
  /** Sampling sessions on in-memory snapshots of this model, oldest first. */
  snapshots: string[];
}

/**
 * How many unnamed sampler snapshots a model keeps. RL saves one per step; each holds a copy
 * of the adapter, so keeping them all would grow without bound over a long run.
 */
const MAX_SNAPSHOTS_PER_MODEL = 8;

/** Where a sampling session's weights come from. */
type SamplerWeights =
  | { kind: "base" }
  | { kind: "checkpoint"; path: string }
  | {
    kind: "snapshot";
    key: string;
    weights: NamedTensors;
    lora: LoraSpec;
    trainable: "lora" | "full";
  };

interface SamplingSession {
  id: string;
  spec: LocalModelSpec;
  modelPath?: string;
  weights: SamplerWeights;
}

interface QueuedSample {
  requestId: string;
  job: SampleJob;
}

const MODEL_OWNER = "local";

/**
 * One embedded Tinker-compatible backend.
 *
 * @example
 * const backend = new LocalBackend({ dataDir: ".tinkerbench" });
 * const { session_id } = backend.createSession({ tags: [], user_metadata: {} });
 */
export class LocalBackend {
  readonly checkpoints: CheckpointStore;
  readonly futures = new FutureStore();
  readonly queue = new ComputeQueue();
  readonly #dedupe = new RetryDedupe();
  readonly #sessions = new Map<string, Session>();
  readonly #models = new Map<string, TrainingModel>();
  readonly #samplingSessions = new Map<string, SamplingSession>();
  readonly #samplers = new Map<string, Promise<Sampler>>();
  readonly #tokenizer = new ByteTokenizer();
  readonly #prefixCache?: PrefixCache;
  readonly #opts: Required<LocalBackendOptions>;
  #snapshots = 0;
  readonly #expiredSnapshots = new Set<string>();
  #sweepTimer?: ReturnType<typeof setInterval>;

  constructor(opts: LocalBackendOptions) {
    // An option passed as `undefined` (as startLocalServer forwards its own) keeps its default.
    const given = Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined));
    this.#opts = { ...LOCAL_BACKEND_DEFAULTS, ...given } as Required<LocalBackendOptions>;
    this.#prefixCache = this.#opts.prefixCacheBytes > 0
      ? new PrefixCache(this.#opts.prefixCacheBytes)
      : undefined;
    this.checkpoints = new CheckpointStore(opts.dataDir);
    if (this.#opts.sessionTtlMs > 0) {
      const every = Math.min(10_000, Math.max(5, this.#opts.sessionTtlMs / 2));
      this.#sweepTimer = setInterval(() => this.#expireSessions(), every);
      Deno.unrefTimer(this.#sweepTimer as unknown as number);
    }
  }

  /** Stops timers and frees every model and sampler. */
  async close(): Promise<void> {
    clearInterval(this.#sweepTimer);
    await this.queue.idle();
    for (const id of [...this.#models.keys()]) this.#dropModel(id);
    for (const s of this.#samplers.values()) (await s.catch(() => undefined))?.dispose();
    this.#samplers.clear();
  }

  // ---- sessions and capabilities ----

  /** The options in effect: the given ones over {@link LOCAL_BACKEND_DEFAULTS}. */
  get options(): Readonly<Required<LocalBackendOptions>> {
    return this.#opts;
  }

  /** The samplers' prefix cache: entries, bytes, hits, misses, prompt tokens not run again. */
  prefixCacheStats(): PrefixCache["stats"] | null {
    return this.#prefixCache?.stats ?? null;
  }

  /** Models this backend serves, for get_server_capabilities. */
  capabilities(): wire.GetServerCapabilitiesResponse {
    return {
      supported_models: localModelNames().map((name) => ({
        model_name: name,
        max_context_length: findLocalModel(name)!.config.maxSeqLen,
      })),
    };
  }

  /** Opens a session. */
  createSession(req: { tags?: string[]; user_metadata?: Record<string, string> | null }) {
    const id = crypto.randomUUID();
    this.#sessions.set(id, {
      id,
      tags: req.tags ?? [],
      userMetadata: req.user_metadata ?? {},
      lastSeen: Date.now(),
      models: new Set(),
      samplingSessions: new Set(),
    });
    return { type: "create_session" as const, session_id: id };
  }

  /** Keeps a session alive. */
  heartbeat(sessionId: string) {
    this.#session(sessionId).lastSeen = Date.now();
    return { type: "session_heartbeat" as const };
  }

  /** Session ids, for the REST listing. */
  listSessions(): string[] {
    return [...this.#sessions.keys()];
  }

  /** What a session owns. */
  sessionInfo(sessionId: string) {
    const s = this.#session(sessionId);
    return { training_run_ids: [...s.models], sampler_ids: [...s.samplingSessions] };
  }

  // ---- training models ----

  /** Creates a LoRA training model; the future resolves once its weights are loaded. */
  createModel(req: wire.CreateModelRequest): string {
    const session = this.#session(req.session_id);
    const spec = this.#spec(req.base_model);
    const lora = parseLora(req.lora_config);
    const trainable = req.user_metadata?.["tinkerbench.trainable"] === "full" ? "full" : "lora";
    const id = `${session.id}:train:${req.model_seq_id}`;
    if (this.#models.has(id)) {
      throw new UserInputError(
        `model_seq_id ${req.model_seq_id} was already used in this session`,
        409,
      );
    }
    const model = this.#newModel(id, session, spec, lora, trainable, req.user_metadata ?? {});
    return this.#run("create_model", async () => {
      await this.#loadLearner(model);
      return { type: "create_model", model_id: id };
    });
  }

  /** Model information (answered directly, not as a future). */
  getInfo(modelId: string): wire.GetInfoResponse {
    const m = this.#model(modelId);
    return {
      type: "get_info",
      model_id: m.id,
      model_data: { arch: "gpt", model_name: m.spec.name, tokenizer_id: m.spec.tokenizerId },
      is_lora: m.trainable === "lora",
      lora_rank: m.lora.rank,
      model_name: m.spec.name,
    };
  }

  /** Unloads a model and frees its memory. */
  unloadModel(modelId: string): string {
    this.#model(modelId);
    return this.#run("unload_model", () => {
      this.#dropModel(modelId);
      return Promise.resolve({ type: "unload_model", model_id: modelId });
    });
  }

  /** Queues a forward or forward_backward pass (in seq order). */
  forwardBackward(
    req: {
      model_id: string;
      seq_id?: number | null;
      data: LearnerDatum[];
      loss_fn: string;
      loss_fn_config?: Record<string, number> | null;
    },
    forwardOnly: boolean,
    print: string,
  ): string {
    const m = this.#model(req.model_id);
    return this.#submitTraining(m, req.seq_id, print, "forward_backward", () => {
      validateForwardBackward(m.spec.config, req.data, req.loss_fn, req.loss_fn_config ?? {});
    }, async (learner) => {
      const out = await learner.forwardBackward(req.data, req.loss_fn, req.loss_fn_config ?? {}, {
        forwardOnly,
      });
      return {
        loss_fn_output_type: "ArrayRecord",
        loss_fn_outputs: out.outputs.map((o) => ({
          logprobs: {
            data: Array.from(o.logprobs.data),
            dtype: "float32",
            shape: o.logprobs.shape,
          },
        })),
        metrics: out.metrics,
      } satisfies wire.ForwardBackwardOutput;
    });
  }

  /** Queues an Adam step over the accumulated gradients. */
  optimStep(
    req: { model_id: string; seq_id?: number | null; adam_params: AdamParams },
    print: string,
  ) {
    const m = this.#model(req.model_id);
    const validate = () => validateAdamParams(req.adam_params);
    return this.#submitTraining(m, req.seq_id, print, "optim_step", validate, async (learner) => {
      return { type: "optim_step", metrics: await learner.optimStep(req.adam_params) };
    });
  }

  /** Queues save_state: weights and optimizer state under `weights/<name>`. */
  saveWeights(req: wire.SaveWeightsRequest, print: string): string {
    const m = this.#model(req.model_id);
    const name = req.path ?? `ckpt-${Date.now()}`;
    return this.#submitTraining(
      m,
      req.seq_id,
      print,
      "save_weights",
      () => checkCheckpointName(name),
      async (l) => {
        const path: TinkerPath = { runId: m.id, kind: "weights", name };
        await this.checkpoints.save(
          path,
          {
            weights: await l.exportAdapter(),
            optimizer: await l.exportOptimizerState(),
          },
          this.#ckptMeta(m, l),
          { ttlSeconds: req.ttl_seconds, overwrite: req.overwrite ?? false },
        );
        await this.#touchRun(m);
        return { type: "save_weights", path: formatTinkerPath(path) };
      },
    );
  }

  /**
   * Queues save_weights_for_sampler. Named: written under `sampler_weights/<name>`. Unnamed
   * (`sampling_session_seq_id` set): an in-memory snapshot with a new sampling session, as the
   * service makes for `save_weights_and_get_sampling_client`.
   */
  saveWeightsForSampler(req: wire.SaveWeightsForSamplerRequest, print: string): string {
    const m = this.#model(req.model_id);
    const named = req.path != null;
    if (!named && req.sampling_session_seq_id == null) {
      throw new UserInputError(
        "save_weights_for_sampler needs a path or a sampling_session_seq_id",
      );
    }
    return this.#submitTraining(m, req.seq_id, print, "save_weights_for_sampler", () => {
      if (named) checkCheckpointName(req.path!);
    }, async (l) => {
      const weights = await l.exportAdapter();
      if (named) {
        const path: TinkerPath = { runId: m.id, kind: "sampler_weights", name: req.path! };
        await this.checkpoints.save(path, { weights }, this.#ckptMeta(m, l), {
          ttlSeconds: req.ttl_seconds,
        });
        await this.#touchRun(m);
        return { type: "save_weights_for_sampler", path: formatTinkerPath(path) };
      }
      const id = `${m.sessionId}:sample:${req.sampling_session_seq_id}`;
      this.#addSamplingSession(m.sessionId, {
        id,
        spec: m.spec,
        weights: {
          kind: "snapshot",
          key: `snapshot-${++this.#snapshots}`,
          weights,
          lora: m.lora,
          trainable: m.trainable,
        },
      });
      m.snapshots.push(id);
      for (
        const old of m.snapshots.splice(
          0,
          Math.max(0, m.snapshots.length - MAX_SNAPSHOTS_PER_MODEL),
        )
      ) {
        this.#samplingSessions.delete(old);
        this.#sessions.get(m.sessionId)?.samplingSessions.delete(old);
        this.#expiredSnapshots.add(old);
      }
      return { type: "save_weights_for_sampler", path: null, sampling_session_id: id };
    });
  }

  /**
   * Queues load_weights. Only allowed as a model's first operation, as on the service;
   * `optimizer` also restores Adam's state.
   */
  loadWeights(req: wire.LoadWeightsRequest, print: string): string {
    if (req.model_id == null) return this.#createViaLoad(req);
    const m = this.#model(req.model_id);
    const path = parseTinkerPath(req.path);
    if (path.kind !== "weights") {
      throw new UserInputError(`load_weights needs a weights/ checkpoint, got ${req.path}`);
    }
    if (m.submitted > 0 && this.#dedupe.lookup(m.id, req.seq_id ?? -1, print) === undefined) {
      throw new UserInputError(
        "load_weights must be the model's first operation after create_model; create a new " +
          "training client from the checkpoint instead",
      );
    }
    return this.#submitTraining(m, req.seq_id, print, "load_weights", () => {}, async (l) => {
      const { meta, tensors } = await this.checkpoints.load(path, { optimizer: req.optimizer });
      checkCompatible(meta, m);
      await l.loadAdapter(tensors.weights);
      if (req.optimizer && tensors.optimizer) await l.loadOptimizerState(tensors.optimizer);
      return { type: "load_weights", path: req.path, model_id: m.id };
    });
  }

  /** weights_info: what a checkpoint was trained from, for create_training_client_from_state. */
  async weightsInfo(tinkerPath: string): Promise<wire.WeightsInfoResponse> {
    const meta = await this.checkpoints.meta(parseTinkerPath(tinkerPath));
    return {
      base_model: meta.base_model,
      is_lora: meta.trainable === "lora",
      lora_rank: meta.lora.rank,
      train_attn: meta.lora.trainAttn,
      train_mlp: meta.lora.trainMlp,
      train_unembed: meta.lora.trainUnembed,
    };
  }

  // ---- sampling ----

  /** Opens a sampling session on a base model or a `tinker://…/sampler_weights/…` path. */
  async createSamplingSession(req: wire.CreateSamplingSessionRequest) {
    const session = this.#session(req.session_id);
    const id = `${session.id}:sample:${req.sampling_session_seq_id}`;
    const resolved = await this.#resolveSamplerWeights(
      req.base_model ?? null,
      req.model_path ?? null,
    );
    this.#addSamplingSession(session.id, { id, ...resolved });
    return { type: "create_sampling_session" as const, sampling_session_id: id };
  }

  /** A sampling session's description (GET samplers/{id}). */
  samplerInfo(id: string) {
    const s = this.#samplingSession(id);
    return { sampler_id: s.id, base_model: s.spec.name, model_path: s.modelPath ?? null };
  }

  /** Queues a sample request; concurrent requests on the same weights run as one batch. */
  async sample(req: wire.SampleRequest, print: string): Promise<string> {
    let target: { id: string; spec: LocalModelSpec; weights: SamplerWeights };
    if (req.sampling_session_id != null) target = this.#samplingSession(req.sampling_session_id);
    else {
      const r = await this.#resolveSamplerWeights(req.base_model ?? null, req.model_path ?? null);
      target = { id: `direct:${r.modelPath ?? r.spec.name}`, ...r };
    }
    const seqId = req.seq_id ?? undefined;
    if (seqId !== undefined) {
      const dup = this.#dedupe.lookup(target.id, seqId, print);
      if (dup) return dup;
    }
    const job = this.#sampleJob(req, target.spec);
    validateSampleJob(target.spec.config, job);
    const requestId = this.futures.create("sample");
    if (seqId !== undefined) this.#dedupe.remember(target.id, seqId, print, requestId);
    const key = samplerKey(target.spec, target.weights);
    this.queue.pushBatchable<QueuedSample>(
      key,
      { requestId, job },
      job.numSamples,
      (items) => this.#runSamples(target.spec, target.weights, items),
    );
    return requestId;
  }

  // ---- futures ----

  /** Waits up to `timeoutMs` for a future (long-poll). */
  retrieve(requestId: string, timeoutMs: number, signal?: AbortSignal): Promise<FutureState> {
    return this.futures.wait(requestId, timeoutMs, signal);
  }

  // ---- REST: runs and checkpoints ----

  /** A run record as the REST API shows it, with its latest checkpoints. */
  async trainingRun(runId: string): Promise<wire.TrainingRun> {
    const run = await this.checkpoints.getRun(runId);
    if (!run) throw new UserInputError(`training run ${JSON.stringify(runId)} not found`, 404);
    return await this.#runView(run);
  }

  /** Runs, most recently used first. */
  async trainingRuns(limit: number, offset: number) {
    const { runs, total } = await this.checkpoints.listRuns(limit, offset);
    return {
      training_runs: await Promise.all(runs.map((r) => this.#runView(r))),
      cursor: { offset, limit, total_count: total },
    };
  }

  /** Checkpoint path of a REST route's `{run_id}/checkpoints/{kind}/{name}`. */
  restPath(runId: string, checkpointId: string): TinkerPath {
    return parseTinkerPath(`tinker://${runId}/${checkpointId}`);
  }

  // ---- internals ----

  #run(kind: FutureKind, work: () => Promise<unknown>): string {
    const id = this.futures.create(kind);
    this.queue.push(() => this.futures.settleWith(id, work));
    return id;
  }

  #submitTraining(
    m: TrainingModel,
    seqId: number | null | undefined,
    print: string,
    kind: FutureKind,
    validate: () => void,
    work: (learner: Learner) => Promise<unknown>,
  ): string {
    const seq = seqId ?? 0;
    if (seq > 0) {
      const dup = this.#dedupe.lookup(m.id, seq, print);
      if (dup) return dup;
    }
    validate();
    const id = this.futures.create(kind);
    if (seq > 0) this.#dedupe.remember(m.id, seq, print, id);
    m.submitted++;
    m.order.enqueue(seq, () =>
      this.queue.push(() =>
        this.futures.settleWith(id, async () => {
          if (!this.#models.has(m.id)) throw new UserInputError(`model ${m.id} was unloaded`, 404);
          if (!m.learner) throw new Error(`model ${m.id} failed to load: ${String(m.loadError)}`);
          return await work(m.learner);
        })
      ));
    return id;
  }

  #newModel(
    id: string,
    session: Session,
    spec: LocalModelSpec,
    lora: LoraSpec,
    trainable: "lora" | "full",
    userMetadata: Record<string, string>,
  ): TrainingModel {
    const model: TrainingModel = {
      id,
      sessionId: session.id,
      spec,
      lora,
      trainable,
      userMetadata,
      submitted: 0,
      snapshots: [],
      order: new SeqOrder({
        gapTimeoutMs: this.#opts.seqGapTimeoutMs,
        onSkip: (from, to) =>
          console.warn(`model ${id}: seq_id ${from}..${to - 1} never arrived; moving on`),
      }),
    };
    this.#models.set(id, model);
    session.models.add(id);
    return model;
  }

  async #loadLearner(model: TrainingModel): Promise<void> {
    try {
      model.learner = await Learner.create({
        config: model.spec.config,
        base: await loadBaseWeights(model.spec),
        lora: model.lora,
        trainable: model.trainable,
      });
      const now = new Date().toISOString();
      await this.checkpoints.saveRun({
        training_run_id: model.id,
        base_model: model.spec.name,
        model_owner: MODEL_OWNER,
        is_lora: model.trainable === "lora",
        corrupted: false,
        lora_rank: model.lora.rank,
        last_request_time: now,
        user_metadata: model.userMetadata,
        lora: model.lora,
        created_at: now,
      });
    } catch (e) {
      model.loadError = e;
      throw e;
    }
  }

  /** The create-via-load addressing: one load_weights that creates the model from a checkpoint. */
  #createViaLoad(req: wire.LoadWeightsRequest): string {
    if (req.session_id == null || req.model_seq_id == null) {
      throw new UserInputError("load_weights needs model_id, or session_id with model_seq_id");
    }
    const session = this.#session(req.session_id);
    const path = parseTinkerPath(req.path);
    const id = `${session.id}:train:${req.model_seq_id}`;
    return this.#run("load_weights", async () => {
      const { meta, tensors } = await this.checkpoints.load(path, { optimizer: req.optimizer });
      const spec = this.#spec(req.base_model ?? meta.base_model);
      const m = this.#newModel(
        id,
        session,
        spec,
        meta.lora,
        meta.trainable,
        req.user_metadata ?? {},
      );
      await this.#loadLearner(m);
      await m.learner!.loadAdapter(tensors.weights);
      if (req.optimizer && tensors.optimizer) {
        await m.learner!.loadOptimizerState(tensors.optimizer);
      }
      return { type: "load_weights", path: req.path, model_id: id };
    });
  }

  #ckptMeta(m: TrainingModel, l: Learner): Omit<CheckpointMeta, keyof CheckpointInfo> {
    return {
      training_run_id: m.id,
      base_model: m.spec.name,
      lora: m.lora,
      trainable: m.trainable,
      optimizer_step: l.step,
    };
  }

  async #touchRun(m: TrainingModel): Promise<void> {
    const run = await this.checkpoints.getRun(m.id);
    if (run) {
      await this.checkpoints.saveRun({ ...run, last_request_time: new Date().toISOString() });
    }
  }

  async #runView(run: RunInfo): Promise<wire.TrainingRun> {
    const ckpts = await this.checkpoints.list(run.training_run_id);
    const { lora: _lora, created_at: _created, ...rest } = run;
    return {
      ...rest,
      last_checkpoint: ckpts.find((c) => c.checkpoint_type === "training") ?? null,
      last_sampler_checkpoint: ckpts.find((c) => c.checkpoint_type === "sampler") ?? null,
    };
  }

  async #resolveSamplerWeights(
    baseModel: string | null,
    modelPath: string | null,
  ): Promise<{ spec: LocalModelSpec; weights: SamplerWeights; modelPath?: string }> {
    if ((baseModel == null) === (modelPath == null)) {
      throw new UserInputError("give exactly one of base_model and model_path");
    }
    if (baseModel != null) return { spec: this.#spec(baseModel), weights: { kind: "base" } };
    const path = parseTinkerPath(modelPath!);
    const meta = await this.checkpoints.meta(path);
    return {
      spec: this.#spec(meta.base_model),
      weights: { kind: "checkpoint", path: modelPath! },
      modelPath: modelPath!,
    };
  }

  #addSamplingSession(sessionId: string, s: SamplingSession): void {
    this.#samplingSessions.set(s.id, s);
    this.#sessions.get(sessionId)?.samplingSessions.add(s.id);
  }

  #sampleJob(req: wire.SampleRequest, spec: LocalModelSpec): SampleJob {
    const p = req.sampling_params;
    const stops = p.stop == null ? [] : typeof p.stop === "string" ? [p.stop] : p.stop;
    const stopTokens: number[] = [];
    const stopSequences: number[][] = [];
    for (const s of stops as Array<string | number>) {
      if (typeof s === "number") stopTokens.push(s);
      else {
        const ids = this.#tokenizer.encode(s);
        if (ids.length === 1) stopTokens.push(ids[0]);
        else if (ids.length > 1) stopSequences.push(ids);
      }
    }
    return {
      prompt: Int32Array.from(modelInputTokens(req.prompt, "prompt")),
      numSamples: req.num_samples ?? 1,
      maxTokens: p.max_tokens ?? spec.config.maxSeqLen,
      temperature: p.temperature ?? 1,
      topK: p.top_k ?? -1,
      topP: p.top_p ?? 1,
      seed: p.seed ?? undefined,
      stopTokens,
      stopSequences,
      promptLogprobs: req.prompt_logprobs ?? false,
      topkPromptLogprobs: req.topk_prompt_logprobs ?? 0,
    };
  }

  async #runSamples(spec: LocalModelSpec, weights: SamplerWeights, items: QueuedSample[]) {
    let results: SampleResult[];
    try {
      const sampler = await this.#sampler(spec, weights);
      results = await sampler.sample(items.map((i) => i.job));
    } catch (e) {
      for (const i of items) this.futures.reject(i.requestId, e);
      return;
    }
    items.forEach((item, i) => this.futures.resolve(item.requestId, toSampleResponse(results[i])));
  }

  #sampler(spec: LocalModelSpec, weights: SamplerWeights): Promise<Sampler> {
    const key = samplerKey(spec, weights);
    const hit = this.#samplers.get(key);
    if (hit) {
      // Re-insert to mark as most recently used.
      this.#samplers.delete(key);
      this.#samplers.set(key, hit);
      return hit;
    }
    const made = this.#makeSampler(spec, weights);
    made.catch(() => this.#samplers.delete(key));
    this.#samplers.set(key, made);
    while (this.#samplers.size > this.#opts.maxCachedSamplers) {
      const [oldKey, old] = this.#samplers.entries().next().value!;
      this.#samplers.delete(oldKey);
      old.then((s) => s.dispose(), () => {});
    }
    return made;
  }

  async #makeSampler(spec: LocalModelSpec, weights: SamplerWeights): Promise<Sampler> {
    const base = await loadBaseWeights(spec);
    if (weights.kind === "base") {
      return await Sampler.create({
        config: spec.config,
        base,
        adapter: null,
        lora: null,
        prefixCache: this.#prefixCache,
      });
    }
    let adapter: NamedTensors, lora: LoraSpec, trainable: "lora" | "full";
    if (weights.kind === "snapshot") ({ weights: adapter, lora, trainable } = weights);
    else {
      const { meta, tensors } = await this.checkpoints.load(parseTinkerPath(weights.path));
      ({ lora, trainable } = meta);
      adapter = tensors.weights;
    }
    if (trainable === "full") {
      return await Sampler.create({
        config: spec.config,
        base: adapter,
        adapter: null,
        lora: null,
        prefixCache: this.#prefixCache,
      });
    }
    return await Sampler.create({
      config: spec.config,
      base,
      adapter,
      lora,
      prefixCache: this.#prefixCache,
    });
  }

  #session(id: string): Session;
  #session(id: string, required: false): Session | undefined;
  #session(id: string, required = true): Session | undefined {
    const s = this.#sessions.get(id);
    if (!s && required) {
      throw new UserInputError(
        `unknown session_id ${JSON.stringify(id)}; create a session first`,
        404,
      );
    }
    if (s) s.lastSeen = Date.now();
    return s;
  }

  #model(id: string): TrainingModel {
    const m = this.#models.get(id);
    if (!m) throw new UserInputError(`unknown model_id ${JSON.stringify(id)}`, 404);
    this.#session(m.sessionId, false);
    return m;
  }

  #samplingSession(id: string): SamplingSession {
    const s = this.#samplingSessions.get(id);
    if (!s && this.#expiredSnapshots.has(id)) {
      throw new UserInputError(
        `sampling session ${id} was an unnamed snapshot and has been dropped (a model keeps its ` +
          `${MAX_SNAPSHOTS_PER_MODEL} newest); save the weights again, or save them by name`,
        404,
      );
    }
    if (!s) throw new UserInputError(`unknown sampling_session_id ${JSON.stringify(id)}`, 404);
    return s;
  }

  #spec(name: string): LocalModelSpec {
    const spec = findLocalModel(name);
    if (!spec) {
      throw new UserInputError(
        `the local backend does not serve ${JSON.stringify(name)}; it serves ` +
          `${localModelNames().join(", ")}. Set TINKER_API_KEY to use the Tinker cloud's models.`,
      );
    }
    return spec;
  }

  #dropModel(id: string): void {
    const m = this.#models.get(id);
    if (!m) return;
    m.order.close();
    m.learner?.dispose();
    this.#models.delete(id);
    this.#dedupe.forget(id);
  }

  #expireSessions(): void {
    const cutoff = Date.now() - this.#opts.sessionTtlMs;
    for (const s of [...this.#sessions.values()]) {
      if (s.lastSeen >= cutoff) continue;
      for (const m of s.models) this.queue.push(() => Promise.resolve(this.#dropModel(m)));
      for (const id of s.samplingSessions) this.#samplingSessions.delete(id);
      this.#sessions.delete(s.id);
    }
  }
}

function parseLora(cfg: wire.CreateModelRequest["lora_config"]): LoraSpec {
  const parsed = LoraSpecSchema.safeParse({
    rank: cfg?.rank ?? 32,
    seed: cfg?.seed ?? Math.floor(Math.random() * 2 ** 31),
    trainAttn: cfg?.train_attn ?? true,
    trainMlp: cfg?.train_mlp ?? true,
    trainUnembed: cfg?.train_unembed ?? true,
  });
  if (!parsed.success) {
    throw new UserInputError(
      `lora_config: ${
        parsed.error.issues.map((i) => `${i.path.join(".")} ${i.message}`).join("; ")
      }`,
    );
  }
  return parsed.data;
}

function checkCompatible(meta: CheckpointMeta, m: TrainingModel): void {
  if (meta.base_model !== m.spec.name) {
    throw new UserInputError(
      `checkpoint ${meta.tinker_path} was trained on ${meta.base_model}, not ${m.spec.name}`,
    );
  }
  if (meta.trainable !== m.trainable || meta.lora.rank !== m.lora.rank) {
    throw new UserInputError(
      `checkpoint ${meta.tinker_path} has LoRA rank ${meta.lora.rank}, the model has ${m.lora.rank}`,
    );
  }
}

function samplerKey(spec: LocalModelSpec, w: SamplerWeights): string {
  return `${spec.name}|${w.kind === "base" ? "base" : w.kind === "checkpoint" ? w.path : w.key}`;
}

/** The token ids of a ModelInput; the local models are text-only. */
export function modelInputTokens(input: wire.ModelInput, field: string): number[] {
  const tokens: number[] = [];
  input.chunks.forEach((c, i) => {
    if (c.type !== "encoded_text") {
      throw new UserInputError(
        `${field}.chunks[${i}] is a ${c.type} chunk; the local backend's models are text-only`,
      );
    }
    for (const t of c.tokens) tokens.push(t);
  });
  return tokens;
}

function toSampleResponse(r: SampleResult): wire.SampleResponse {
  return {
    type: "sample",
    sequences: r.sequences.map((s) => ({
      stop_reason: s.stopReason,
      tokens: s.tokens,
      logprobs: s.logprobs,
    })),
    prompt_logprobs: r.promptLogprobs ?? null,
    topk_prompt_logprobs: r.topkPromptLogprobs ?? null,
    prompt_cache_hit_tokens: 0,
  };
}
