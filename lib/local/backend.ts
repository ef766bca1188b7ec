/**
 * The local backend: one embedded Tinker-compatible service, independent of HTTP. A facade
 * over its parts in `backend/`: client sessions ({@link ClientSessions}), training models
 * ({@link TrainingModels}, a `Learner` each), the sampling service ({@link SamplingService}:
 * sampling sessions, snapshots, the sampler cache) and the REST views ({@link RestViews}), with
 * requests run as futures on one compute queue (`runtime/`). Its methods take and return
 * protocol types; `backend/wire.ts` translates them. The HTTP app in `server/` validates
 * bodies and calls these methods; nothing here depends on it.
 *
 * @module
 */

import { type CheckpointInfo, CheckpointStore } from "./checkpoints.ts";
import type { TinkerPath } from "../protocol/paths.ts";
import type { FutureState, FutureStore } from "./runtime/futures.ts";
import type { ComputeQueue } from "./runtime/compute_queue.ts";
import { Requests } from "./runtime/requests.ts";
import { FAILURE_LOG_NAME, recordFailure } from "./runtime/failures.ts";
import { join } from "node:path";
import type { AdamParams } from "./train/mod.ts";
import { defaultSamplerEngine, type PrefixCache, type SamplerEngine } from "./sampler/mod.ts";
import { ClientSessions } from "./backend/sessions.ts";
import { TrainingModels } from "./backend/training.ts";
import { SamplingService } from "./backend/sampling.ts";
import { type Cursor, RestViews } from "./backend/rest_views.ts";
import { toCapabilities, toLearnerDatums, toModelInfo } from "./backend/wire.ts";
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
   * Bytes for the samplers' prefix cache (keys and values of earlier turns, reused by prompts
   * that extend them, so a multi-turn episode prefills only each turn's new tokens); 0 turns it
   * off. Default: {@link defaultPrefixCacheBytes} of the sampler engine.
   */
  prefixCacheBytes?: number;
  /**
   * The engine samplers decode on: `onnx` (ONNX Runtime, the default) or `jax` (jax-js, the
   * learner's engine). Default: `$TINKERBENCH_SAMPLER_ENGINE`, else `onnx`.
   */
  samplerEngine?: SamplerEngine;
}

/** What a {@link LocalBackend} uses for the options it is not given. */
export const LOCAL_BACKEND_DEFAULTS: Required<
  Omit<LocalBackendOptions, "dataDir" | "samplerEngine" | "prefixCacheBytes">
> = {
  sessionTtlMs: 300_000,
  seqGapTimeoutMs: 30_000,
  maxCachedSamplers: 8,
};

/**
 * The prefix cache's default size on each sampler engine: 192 MiB on ONNX Runtime, off on
 * jax-js.
 *
 * On ONNX Runtime the cache's rows are host arrays under this byte budget, outside the wasm heap
 * the learner uses; with it on, the 100-step soak (`deno task bench soak`) held resident memory
 * within its 10 % bound, and rollouts ran 1.6× faster with 32 episodes in flight (`deno task
 * bench rollout`). On jax-js the rows live in the wasm heap, whose allocator keeps every distinct
 * buffer size it has seen (`shapes.ts`): with a learner in the same process the soak grew from
 * 2.78 GiB of heap after step 10 to 3.24 GiB after step 32, still rising toward the 4 GiB limit.
 *
 * @example
 * defaultPrefixCacheBytes("onnx"); // 201326592
 */
export function defaultPrefixCacheBytes(engine: SamplerEngine): number {
  return engine === "onnx" ? 192 * 2 ** 20 : 0;
}

/**
 * One embedded Tinker-compatible backend.
 *
 * @example
 * const backend = new LocalBackend({ dataDir: ".tinkerbench" });
 * const { session_id } = backend.createSession({ tags: [], user_metadata: {} });
 */
export class LocalBackend {
  /** Where checkpoints and run records are kept. */
  readonly checkpoints: CheckpointStore;
  readonly #requests = new Requests();
  /** Where server-side failures are logged with their stack traces. */
  readonly failureLog: string;
  /** The futures requests resolve into (long-polled by `retrieve_future`). */
  readonly futures: FutureStore = this.#requests.futures;
  /** The one compute queue every training and sampling request runs on, in arrival order. */
  readonly queue: ComputeQueue = this.#requests.queue;
  readonly #sessions = new ClientSessions();
  readonly #training: TrainingModels;
  readonly #sampling: SamplingService;
  readonly #views: RestViews;
  readonly #opts: Required<LocalBackendOptions>;
  #sweepTimer?: ReturnType<typeof setInterval>;

  /** A backend with `opts` (its data directory, sampler engine, limits). */
  constructor(opts: LocalBackendOptions) {
    // An option passed as `undefined` (as startLocalServer forwards its own) keeps its default.
    const given = Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined));
    const samplerEngine = opts.samplerEngine ?? defaultSamplerEngine();
    this.#opts = {
      ...LOCAL_BACKEND_DEFAULTS,
      samplerEngine,
      prefixCacheBytes: defaultPrefixCacheBytes(samplerEngine),
      ...given,
    } as Required<LocalBackendOptions>;
    this.checkpoints = new CheckpointStore(opts.dataDir);
    this.failureLog = join(opts.dataDir, FAILURE_LOG_NAME);
    this.futures.describeServerError = (e) => recordFailure(this.failureLog, e);
    const parts = { sessions: this.#sessions, checkpoints: this.checkpoints };
    this.#sampling = new SamplingService({
      ...parts,
      requests: this.#requests,
      maxCachedSamplers: this.#opts.maxCachedSamplers,
      prefixCacheBytes: this.#opts.prefixCacheBytes,
      samplerEngine: this.#opts.samplerEngine,
    });
    this.#training = new TrainingModels({
      ...parts,
      requests: this.#requests,
      sampling: this.#sampling,
      seqGapTimeoutMs: this.#opts.seqGapTimeoutMs,
    });
    this.#views = new RestViews(this.checkpoints, this.#sessions);
    if (this.#opts.sessionTtlMs > 0) {
      const every = Math.min(10_000, Math.max(5, this.#opts.sessionTtlMs / 2));
      this.#sweepTimer = setInterval(() => this.#expireSessions(), every);
      Deno.unrefTimer(this.#sweepTimer as unknown as number);
    }
  }

  /**
   * Stops timers and frees every model and sampler, once the queued training work has run
   * (queued generation is dropped: no client will read it).
   */
  async close(): Promise<void> {
    clearInterval(this.#sweepTimer);
    this.#sampling.stopSampling("the local backend is closing");
    await this.queue.idle();
    this.#training.dropAll();
    await this.#sampling.close();
  }

  // ---- sessions and capabilities ----

  /** The options in effect: the given ones over {@link LOCAL_BACKEND_DEFAULTS}. */
  get options(): Readonly<Required<LocalBackendOptions>> {
    return this.#opts;
  }

  /** The samplers' prefix cache: entries, bytes, hits, misses, prompt tokens not run again. */
  prefixCacheStats(): PrefixCache["stats"] | null {
    return this.#sampling.samplers.prefixCacheStats();
  }

  /** Models this backend serves, for get_server_capabilities. */
  capabilities(): wire.GetServerCapabilitiesResponse {
    return toCapabilities();
  }

  /** Opens a session. */
  createSession(
    req: { tags?: string[]; user_metadata?: Record<string, string> | null },
  ): { type: "create_session"; session_id: string } {
    const session = this.#sessions.create(req.tags ?? [], req.user_metadata ?? {});
    return { type: "create_session" as const, session_id: session.id };
  }

  /** Keeps a session alive. */
  heartbeat(sessionId: string): { type: "session_heartbeat" } {
    this.#sessions.get(sessionId);
    return { type: "session_heartbeat" as const };
  }

  /** Session ids, for the REST listing. */
  listSessions(): string[] {
    return this.#sessions.ids();
  }

  /** What a session owns. */
  sessionInfo(sessionId: string): { training_run_ids: string[]; sampler_ids: string[] } {
    return this.#views.sessionInfo(sessionId);
  }

  // ---- training models ----

  /** Creates a LoRA training model; the future resolves once its weights are loaded. */
  createModel(req: wire.CreateModelRequest): string {
    return this.#training.createModel(req);
  }

  /** Model information (answered directly, not as a future). */
  getInfo(modelId: string): wire.GetInfoResponse {
    return toModelInfo(this.#training.model(modelId));
  }

  /** Unloads a model and frees its memory. */
  unloadModel(modelId: string): string {
    return this.#training.unloadModel(modelId);
  }

  /** Queues a forward or forward_backward pass (in seq order). */
  forwardBackward(
    req: {
      model_id: string;
      seq_id?: number | null;
      data: readonly wire.Datum[];
      loss_fn: string;
      loss_fn_config?: Record<string, number> | null;
    },
    forwardOnly: boolean,
    print: string,
  ): string {
    const data = toLearnerDatums(req.data);
    return this.#training.forwardBackward({ ...req, data }, forwardOnly, print);
  }

  /** Queues an Adam step over the accumulated gradients. */
  optimStep(
    req: { model_id: string; seq_id?: number | null; adam_params: AdamParams },
    print: string,
  ): string {
    return this.#training.optimStep(req, print);
  }

  /** Queues save_state: weights and optimizer state under `weights/<name>`. */
  saveWeights(req: wire.SaveWeightsRequest, print: string): string {
    return this.#training.saveWeights(req, print);
  }

  /**
   * Queues save_weights_for_sampler: named, a `sampler_weights/` checkpoint; unnamed, an
   * in-memory snapshot with a new sampling session.
   */
  saveWeightsForSampler(req: wire.SaveWeightsForSamplerRequest, print: string): string {
    return this.#training.saveWeightsForSampler(req, print);
  }

  /** Queues load_weights (a model's first operation, or creating the model from a checkpoint). */
  loadWeights(req: wire.LoadWeightsRequest, print: string): string {
    return this.#training.loadWeights(req, print);
  }

  /** weights_info: what a checkpoint was trained from, for create_training_client_from_state. */
  weightsInfo(tinkerPath: string): Promise<wire.WeightsInfoResponse> {
    return this.#views.weightsInfo(tinkerPath);
  }

  // ---- sampling ----

  /** Opens a sampling session on a base model or a `tinker://…/sampler_weights/…` path. */
  async createSamplingSession(
    req: wire.CreateSamplingSessionRequest,
  ): Promise<{ type: "create_sampling_session"; sampling_session_id: string }> {
    const id = await this.#sampling.createSamplingSession(req);
    return { type: "create_sampling_session" as const, sampling_session_id: id };
  }

  /** A sampling session's description (GET samplers/{id}). */
  samplerInfo(
    id: string,
  ): { sampler_id: string; base_model: string; model_path: string | null } {
    return this.#sampling.samplerInfo(id);
  }

  /** Queues a sample request; concurrent requests on the same weights run as one batch. */
  sample(req: wire.SampleRequest, print: string): Promise<string> {
    return this.#sampling.sample(req, print);
  }

  /**
   * The run using this backend is stopping: queued and later generation fails with `reason`,
   * so its last step and checkpoint run next (see {@link SamplingService.stopSampling}).
   */
  stopSampling(reason: string): number {
    return this.#sampling.stopSampling(reason);
  }

  // ---- futures ----

  /** Waits up to `timeoutMs` for a future (long-poll). */
  retrieve(requestId: string, timeoutMs: number, signal?: AbortSignal): Promise<FutureState> {
    return this.futures.wait(requestId, timeoutMs, signal);
  }

  // ---- REST: runs, checkpoints, sessions ----

  /** A run record as the REST API shows it, with its latest checkpoints. */
  trainingRun(runId: string): Promise<wire.TrainingRun> {
    return this.#views.trainingRun(runId);
  }

  /** Runs, most recently used first. */
  trainingRuns(
    limit: number,
    offset: number,
  ): Promise<{ training_runs: wire.TrainingRun[]; cursor: Cursor }> {
    return this.#views.trainingRuns(limit, offset);
  }

  /** A run's checkpoints, newest first. */
  runCheckpoints(runId: string): Promise<{ checkpoints: CheckpointInfo[] }> {
    return this.#views.runCheckpoints(runId);
  }

  /** One page of every run's checkpoints. */
  allCheckpoints(
    limit: number,
    offset: number,
  ): Promise<{ checkpoints: CheckpointInfo[]; cursor: Cursor }> {
    return this.#views.checkpoints(limit, offset);
  }

  /** Checkpoint path of a REST route's `{run_id}/checkpoints/{kind}/{name}`. */
  restPath(runId: string, checkpointId: string): TinkerPath {
    return this.#views.restPath(runId, checkpointId);
  }

  #expireSessions(): void {
    for (const s of this.#sessions.expire(Date.now() - this.#opts.sessionTtlMs)) {
      this.#training.dropQueued(s.models);
      this.#sampling.drop(s.samplingSessions);
    }
  }
}
