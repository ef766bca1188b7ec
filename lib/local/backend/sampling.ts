/**
 * The sampling service of the local backend: sampling sessions (on a base model, a saved
 * `sampler_weights/` checkpoint, or an in-memory snapshot of a training model) and sample
 * requests, which run as one batch per set of weights on the compute queue. When the run that
 * samples stops ({@link SamplingService.stopSampling}), queued generation is dropped and the
 * batch decoding ends at its next token, each with a clear error, so the step in training and
 * its checkpoint do not wait behind samples nobody will read.
 *
 * @module
 */

import { UserInputError } from "../errors.ts";
import type { LocalModelSpec } from "../models.ts";
import type { LoraSpec } from "../model/config.ts";
import type { NamedTensors } from "../tensors.ts";
import type { CheckpointStore } from "../checkpoints.ts";
import type { Requests } from "../runtime/requests.ts";
import { ShuttingDownError } from "../runtime/futures.ts";
import type { Trainable } from "../train/mod.ts";
import {
  type SampleJob,
  type SamplerEngine,
  type SampleResult,
  validateSampleJob,
} from "../sampler/mod.ts";
import { parseTinkerPath } from "../../protocol/paths.ts";
import type * as wire from "../../protocol/mod.ts";
import type { ClientSessions } from "./sessions.ts";
import { SamplerCache, samplerKey, type SamplerWeights } from "./sampler_cache.ts";
import { toModelSpec, toSampleJob, toSampleResponse } from "./wire.ts";

/**
 * How many unnamed sampler snapshots a model keeps. RL saves one per step; each holds a copy
 * of the adapter, so keeping them all would grow without bound over a long run.
 */
export const MAX_SNAPSHOTS_PER_MODEL = 8;

/** Options of a {@link SamplingService}. */
export interface SamplingServiceOptions {
  sessions: ClientSessions;
  checkpoints: CheckpointStore;
  requests: Requests;
  /** Most sampler weight sets kept in memory at once. */
  maxCachedSamplers: number;
  /** Device bytes of the samplers' prefix cache; 0 turns it off. */
  prefixCacheBytes: number;
  /** The engine samplers decode on. */
  samplerEngine: SamplerEngine;
}

/** What a new snapshot samples from: a training model's current weights. */
export interface Snapshot {
  /** The training model it was taken from. */
  modelId: string;
  /** The session of that model, which owns the new sampling session. */
  sessionId: string;
  /** The client's number for the new sampling session. */
  samplingSessionSeqId: number;
  spec: LocalModelSpec;
  weights: NamedTensors;
  lora: LoraSpec;
  trainable: Trainable;
}

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

/**
 * Sampling sessions and sample requests.
 *
 * @example
 * const id = await sampling.createSamplingSession({ session_id, sampling_session_seq_id: 0, base_model: "local/tiny" });
 * const requestId = await sampling.sample({ sampling_session_id: id, prompt, sampling_params: {} }, print);
 */
export class SamplingService {
  readonly samplers: SamplerCache;
  readonly #sessions: ClientSessions;
  readonly #checkpoints: CheckpointStore;
  readonly #requests: Requests;
  readonly #samplingSessions = new Map<string, SamplingSession>();
  /** Snapshot sampling sessions of each training model, oldest first. */
  readonly #snapshotsOf = new Map<string, string[]>();
  readonly #expiredSnapshots = new Set<string>();
  #snapshots = 0;
  /** Why generation stopped ({@link stopSampling}); null while it runs. */
  #stopped: ShuttingDownError | null = null;
  /** Aborted with {@link #stopped}: the batch decoding ends at its next token. */
  readonly #generation = new AbortController();

  constructor(opts: SamplingServiceOptions) {
    this.#sessions = opts.sessions;
    this.#checkpoints = opts.checkpoints;
    this.#requests = opts.requests;
    this.samplers = new SamplerCache({
      checkpoints: opts.checkpoints,
      maxSamplers: opts.maxCachedSamplers,
      prefixCacheBytes: opts.prefixCacheBytes,
      engine: opts.samplerEngine,
    });
  }

  /** Opens a sampling session on a base model or a `tinker://…/sampler_weights/…` path. */
  async createSamplingSession(req: wire.CreateSamplingSessionRequest): Promise<string> {
    const session = this.#sessions.get(req.session_id);
    const id = `${session.id}:sample:${req.sampling_session_seq_id}`;
    const resolved = await this.#resolve(req.base_model ?? null, req.model_path ?? null);
    this.#add(session.id, { id, ...resolved });
    return id;
  }

  /**
   * Opens a sampling session on an in-memory snapshot, as the service does for
   * `save_weights_and_get_sampling_client`. A model keeps its {@link MAX_SNAPSHOTS_PER_MODEL}
   * newest snapshots; older ones are dropped and their ids answer 404 with the reason.
   */
  addSnapshot(s: Snapshot): string {
    const id = `${s.sessionId}:sample:${s.samplingSessionSeqId}`;
    this.#add(s.sessionId, {
      id,
      spec: s.spec,
      weights: {
        kind: "snapshot",
        key: `snapshot-${++this.#snapshots}`,
        weights: s.weights,
        lora: s.lora,
        trainable: s.trainable,
      },
    });
    const ids = this.#snapshotsOf.get(s.modelId) ?? [];
    this.#snapshotsOf.set(s.modelId, ids);
    ids.push(id);
    for (const old of ids.splice(0, Math.max(0, ids.length - MAX_SNAPSHOTS_PER_MODEL))) {
      this.#samplingSessions.delete(old);
      this.#sessions.peek(s.sessionId)?.samplingSessions.delete(old);
      this.#expiredSnapshots.add(old);
    }
    return id;
  }

  /**
   * Forgets which snapshots a training model took (it was unloaded): they stay usable, and a
   * new model under the same id starts its own count.
   */
  forgetModel(modelId: string): void {
    this.#snapshotsOf.delete(modelId);
  }

  /** Closes sampling sessions (their session expired). */
  drop(ids: Iterable<string>): void {
    for (const id of ids) this.#samplingSessions.delete(id);
  }

  /** A sampling session's description (GET samplers/{id}). */
  samplerInfo(id: string) {
    const s = this.#samplingSession(id);
    return { sampler_id: s.id, base_model: s.spec.name, model_path: s.modelPath ?? null };
  }

  /**
   * Makes the sampler of sampling session `id` now. A snapshot's is sampled from next (that is
   * what `save_weights_and_get_sampling_client` is for); making it as part of the save, whose
   * result the client polls a round trip later anyway, takes it off the next rollout's path. A
   * failure is left for the first sample request to report.
   */
  async warm(id: string): Promise<void> {
    const s = this.#samplingSession(id);
    await this.samplers.get(s.spec, s.weights).catch(() => {});
  }

  /** Queues a sample request; concurrent requests on the same weights run as one batch. */
  async sample(req: wire.SampleRequest, print: string): Promise<string> {
    let target: { id: string; spec: LocalModelSpec; weights: SamplerWeights };
    if (req.sampling_session_id != null) target = this.#samplingSession(req.sampling_session_id);
    else {
      const r = await this.#resolve(req.base_model ?? null, req.model_path ?? null);
      target = { id: `direct:${r.modelPath ?? r.spec.name}`, ...r };
    }
    let job!: SampleJob;
    return this.#requests.accept({
      key: target.id,
      seqId: req.seq_id ?? undefined,
      print,
      kind: "sample",
      validate: () => {
        job = toSampleJob(req, target.spec);
        validateSampleJob(target.spec.config, job);
      },
      schedule: (requestId) => {
        // Scoring (prompt log-probs) is what a step in training may still need: it always runs.
        const generates = !job.promptLogprobs;
        if (generates && this.#stopped) {
          return this.#requests.futures.reject(requestId, this.#stopped);
        }
        this.#requests.queue.pushBatchable<QueuedSample>(
          samplerKey(target.spec, target.weights),
          { requestId, job },
          job.numSamples,
          (items) => this.#runSamples(target.spec, target.weights, items),
          generates
            ? (item, reason) => this.#requests.futures.reject(item.requestId, reason)
            : undefined,
        );
      },
    });
  }

  /**
   * Stops generation: queued sample requests that generate fail at once with `reason`, the batch
   * decoding fails at its next token, and so do later ones; scoring requests (prompt log-probs,
   * which a step in training may need) still run. The trainer calls it when its run stops
   * (Ctrl-C, SIGTERM), so the step in flight and the checkpoint run next. Returns how many
   * queued requests were dropped.
   */
  stopSampling(reason: string): number {
    this.#stopped ??= new ShuttingDownError(`sample request dropped: ${reason}`);
    this.#generation.abort(this.#stopped);
    return this.#requests.queue.dropQueued(this.#stopped);
  }

  /** Frees every sampler. */
  close(): Promise<void> {
    return this.samplers.close();
  }

  async #runSamples(spec: LocalModelSpec, weights: SamplerWeights, items: QueuedSample[]) {
    const futures = this.#requests.futures;
    let results: SampleResult[];
    // A batch that only generates is cut at the next token when the run stops; one with a
    // scoring request in it (a step in training may need its log-probs) runs to its end.
    const generates = items.every((i) => !i.job.promptLogprobs);
    const signal = generates ? this.#generation.signal : undefined;
    try {
      signal?.throwIfAborted();
      const sampler = await this.samplers.get(spec, weights);
      results = await sampler.sample(items.map((i) => i.job), { signal });
    } catch (e) {
      for (const i of items) futures.reject(i.requestId, e);
      return;
    }
    items.forEach((item, i) => futures.resolve(item.requestId, toSampleResponse(results[i])));
  }

  async #resolve(
    baseModel: string | null,
    modelPath: string | null,
  ): Promise<{ spec: LocalModelSpec; weights: SamplerWeights; modelPath?: string }> {
    if ((baseModel == null) === (modelPath == null)) {
      throw new UserInputError("give exactly one of base_model and model_path");
    }
    if (baseModel != null) return { spec: toModelSpec(baseModel), weights: { kind: "base" } };
    const meta = await this.#checkpoints.meta(parseTinkerPath(modelPath!));
    return {
      spec: toModelSpec(meta.base_model),
      weights: { kind: "checkpoint", path: modelPath! },
      modelPath: modelPath!,
    };
  }

  #add(sessionId: string, s: SamplingSession): void {
    this.#samplingSessions.set(s.id, s);
    this.#sessions.peek(sessionId)?.samplingSessions.add(s.id);
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
}
