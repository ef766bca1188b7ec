/**
 * A LoRA training run on a Tinker-compatible server.
 *
 * Operations are numbered at call time (seq ids 1, 2, 3, …) and each POST leaves at once, in
 * call order, without waiting for the previous one to be accepted: the server runs a model's
 * work in seq-id order whatever order the POSTs arrive in (the hosted service does, and the
 * official SDK relies on it for its parallel forward_backward chunks). So a step's
 * forward_backward, optim_step and sampler save cost one round trip to submit, not one each;
 * a caller may submit them all before awaiting any (pipelining).
 *
 * @module
 */

import type { Tokenizer } from "../tokenizers/types.ts";
import { z } from "zod";
import {
  ADAM_DEFAULTS,
  type Datum,
  encodeForwardBackwardRequest,
  type ForwardBackwardOutput,
  GetInfoResponseSchema,
} from "../protocol/mod.ts";
import { APIFuture, type ResultDecoder } from "./futures.ts";
import { awaitResult, type RetryContext, type Submission, submitWithRetries } from "./retry.ts";
import type { AdamParams } from "./types.ts";
import type { SamplingClient } from "./sampling_client.ts";
import { chunkData, type ChunkLimits, mergeForwardBackwardOutputs } from "./chunking.ts";

/** What a TrainingClient needs from the ServiceClient that made it. */
export interface TrainingClientContext extends RetryContext {
  /** Next per-session sampling-session number (shared with create_sampling_session). */
  nextSamplingSessionSeq(): number;
  /** A sampling client on an existing sampling session. */
  samplingClientFor(samplingSessionId: string, baseModel: string): SamplingClient;
  /** The server's forward_backward chunk limits. */
  chunkLimits: ChunkLimits;
  /** A base model's tokenizer (ServiceClientOptions.tokenizers). */
  tokenizers: (baseModel: string) => Tokenizer;
}

/**
 * A custom loss over per-token log-probs (one array per datum): its value, its gradient with
 * respect to every log-prob, and optional metrics (`name:reduction` keys).
 */
export type CustomLossFn = (
  data: Datum[],
  logprobs: number[][],
) =>
  | { loss: number; gradients: number[][]; metrics?: Record<string, number> }
  | Promise<{ loss: number; gradients: number[][]; metrics?: Record<string, number> }>;

const OptimStepResponseSchema = z.object({ metrics: z.record(z.string(), z.number()).nullish() });
const PathResponseSchema = z.object({ path: z.string().nullish() });
const SamplerSaveResponseSchema = z.object({
  path: z.string().nullish(),
  sampling_session_id: z.string().nullish(),
});

/** Training operations on one model (a LoRA adapter over a base model). */
export class TrainingClient {
  /** The training run's id (the `model_id` of every request). */
  readonly modelId: string;
  /** The base model the adapter trains on. */
  readonly baseModel: string;
  readonly #ctx: TrainingClientContext;
  #seq = 0;
  /**
   * Set while a custom loss's backward has no seq id yet (forwardBackwardCustom): resolves once
   * every submission queued behind it has its seq id. Submissions made meanwhile queue behind
   * it, in call order, so that they run after that backward, as they were called.
   */
  #tail: Promise<void> | null = null;

  /** Made by {@link ServiceClient.createLoraTrainingClient}, not directly. */
  constructor(ctx: TrainingClientContext, modelId: string, baseModel: string) {
    this.#ctx = ctx;
    this.modelId = modelId;
    this.baseModel = baseModel;
  }

  /** Computes the loss and accumulates its gradient (summed until the next optimStep). */
  forwardBackward(
    data: Datum[],
    lossFn: string,
    lossFnConfig: Record<string, number> = {},
  ): APIFuture<ForwardBackwardOutput> {
    return this.#fwd(data, lossFn, lossFnConfig, false);
  }

  /** Computes the loss and outputs (e.g. log-probs) without a gradient. */
  forward(
    data: Datum[],
    lossFn: string,
    lossFnConfig: Record<string, number> = {},
  ): APIFuture<ForwardBackwardOutput> {
    return this.#fwd(data, lossFn, lossFnConfig, true);
  }

  /**
   * Trains on any differentiable function of the per-token log-probs, with two server passes
   * as Tinker's SDK does it: a `forward` gives the log-probs; `lossFn` returns the loss and its
   * gradient with respect to each log-prob; a `forward_backward` with `cross_entropy` and
   * `weights = −gradient` then has exactly that gradient (cross-entropy is `Σ −w·lp`).
   * Operations called after it, without waiting for it, run after its backward: they take
   * their seq ids once the backward has its own.
   *
   * @example
   * // maximise the mean log-prob of each sequence
   * training.forwardBackwardCustom(data, (_data, lps) => ({
   *   loss: -lps.reduce((a, lp) => a + lp.reduce((s, x) => s + x, 0) / lp.length, 0),
   *   gradients: lps.map((lp) => lp.map(() => -1 / lp.length)),
   * }));
   */
  forwardBackwardCustom(data: Datum[], lossFn: CustomLossFn): APIFuture<ForwardBackwardOutput> {
    const inputs = data.map((d, i) => {
      const extra = Object.keys(d.loss_fn_inputs).filter((k) =>
        k !== "target_tokens" && k !== "weights"
      );
      if (extra.length > 0) {
        throw new Error(
          `forwardBackwardCustom: data[${i}] may only have target_tokens and weights, not ${extra}`,
        );
      }
      const targets = d.loss_fn_inputs.target_tokens;
      const weights = d.loss_fn_inputs.weights ??
        {
          data: new Float32Array(targets.data.length),
          dtype: "float32" as const,
          shape: targets.shape,
        };
      return { ...d, loss_fn_inputs: { target_tokens: targets, weights } };
    });
    const forward = this.forward(inputs, "cross_entropy");
    // Later submissions wait until the backward has its seq ids (or the forward or the loss
    // failed, and there is no backward).
    const backwardNumbered = signal();
    this.#queueBehind(backwardNumbered.promise);
    return new APIFuture(
      forward.result().then(async (out) => {
        const logprobs = out.loss_fn_outputs.map((o) => Array.from(o.logprobs.data));
        const { loss, gradients, metrics = {} } = await lossFn(data, logprobs);
        if (
          gradients.length !== logprobs.length ||
          gradients.some((g, i) => g.length !== logprobs[i].length)
        ) {
          throw new Error(
            "forwardBackwardCustom: gradients must have one value per log-prob of every datum",
          );
        }
        const surrogate = inputs.map((d, i) => ({
          ...d,
          loss_fn_inputs: {
            ...d.loss_fn_inputs,
            weights: {
              data: gradients[i].map((g) => -g),
              dtype: "float32" as const,
              shape: d.loss_fn_inputs.weights.shape,
            },
          },
        }));
        const backward = this.#fwd(surrogate, "cross_entropy", {}, false, true);
        backwardNumbered.resolve();
        const result = await backward;
        return { ...result, metrics: { ...result.metrics, "custom_loss:sum": loss, ...metrics } };
      }).finally(() => backwardNumbered.resolve()),
    );
  }

  /**
   * One Adam step on the accumulated gradients. Every Adam parameter is sent, as the SDK sends
   * them: those not given take the SDK's defaults ({@link ADAM_DEFAULTS}), never the server's.
   */
  optimStep(adamParams: AdamParams = {}): APIFuture<{ metrics?: Record<string, number> | null }> {
    const given = Object.entries(adamParams).filter(([, v]) => v !== undefined);
    const adam_params = { ...ADAM_DEFAULTS, ...Object.fromEntries(given) };
    return this.#submit("optim_step", (seq_id) => ({
      json: { adam_params, model_id: this.modelId, seq_id, type: "optim_step" },
    }), { json: OptimStepResponseSchema });
  }

  /**
   * Saves weights and optimizer state as `tinker://<run>/weights/<name>` (for resuming).
   * `overwrite` (default false, as the SDK sends it) replaces a checkpoint of the same name.
   */
  saveState(
    name: string,
    { ttlSeconds, overwrite = false }: { ttlSeconds?: number; overwrite?: boolean } = {},
  ): APIFuture<string> {
    const f = this.#submit("save_weights", (seq_id) => ({
      json: {
        model_id: this.modelId,
        path: name,
        seq_id,
        ttl_seconds: ttlSeconds,
        overwrite,
        type: "save_weights",
      },
    }), { json: PathResponseSchema });
    return new APIFuture(f.result().then((r) => r.path!));
  }

  /** Saves sampler weights as `tinker://<run>/sampler_weights/<name>`. */
  saveWeightsForSampler(
    name: string,
    { ttlSeconds }: { ttlSeconds?: number } = {},
  ): APIFuture<string> {
    const f = this.#submit("save_weights_for_sampler", (seq_id) => ({
      json: {
        model_id: this.modelId,
        path: name,
        seq_id,
        ttl_seconds: ttlSeconds,
        type: "save_weights_for_sampler",
      },
    }), { json: SamplerSaveResponseSchema });
    return new APIFuture(f.result().then((r) => r.path!));
  }

  /** Snapshots the current weights into a new sampling client (nothing persisted). */
  saveWeightsAndGetSamplingClient(): APIFuture<SamplingClient> {
    const samplingSeq = this.#ctx.nextSamplingSessionSeq();
    const f = this.#submit("save_weights_for_sampler", (seq_id) => ({
      json: {
        model_id: this.modelId,
        sampling_session_seq_id: samplingSeq,
        seq_id,
        type: "save_weights_for_sampler",
      },
    }), { json: SamplerSaveResponseSchema });
    return new APIFuture(
      f.result().then((r) => {
        if (!r.sampling_session_id) {
          throw new Error("save_weights_for_sampler: the server returned no sampling_session_id");
        }
        return this.#ctx.samplingClientFor(r.sampling_session_id, this.baseModel);
      }),
    );
  }

  /** Loads weights only (`weights/` checkpoint); must be the model's first operation. */
  loadState(path: string): APIFuture<void> {
    return this.#load(path, false);
  }

  /** Loads weights and Adam's state; must be the model's first operation. */
  loadStateWithOptimizer(path: string): APIFuture<void> {
    return this.#load(path, true);
  }

  /** The tokenizer of the base model (a Hugging Face tokenizer, or the local byte tokenizer). */
  getTokenizer(): Tokenizer {
    return this.#ctx.tokenizers(this.baseModel);
  }

  /** Model information (base model, LoRA rank, tokenizer id). */
  async getInfo(): Promise<z.infer<typeof GetInfoResponseSchema>> {
    return await this.#ctx.http.json("POST", "get_info", GetInfoResponseSchema, {
      model_id: this.modelId,
      type: "get_info",
    });
  }

  #load(path: string, optimizer: boolean): APIFuture<void> {
    const f = this.#submit("load_weights", (seq_id) => ({
      json: { model_id: this.modelId, path, optimizer, seq_id, type: "load_weights" },
    }), { json: z.object({}).loose() });
    return new APIFuture(f.result().then(() => {}));
  }

  /**
   * One submission per chunk (each takes its own seq id, in order); results merged. `now`: take
   * the seq ids at once, ahead of the queue (a custom loss's backward, which the queue waits for).
   */
  #fwd(
    data: Datum[],
    lossFn: string,
    cfg: Record<string, number>,
    forwardOnly: boolean,
    now = false,
  ) {
    const submit = now ? this.#send.bind(this) : this.#submit.bind(this);
    const parts = chunkData(data, this.#ctx.chunkLimits).map((chunk) =>
      submit<ForwardBackwardOutput>("forward_backward", (seq_id) => ({
        proto: encodeForwardBackwardRequest({
          model_id: this.modelId,
          seq_id,
          data: chunk,
          loss_fn: lossFn,
          loss_fn_config: cfg,
          forward_only: forwardOnly,
        }),
      }), { proto: "forward_backward" }).result()
    );
    return new APIFuture(Promise.all(parts).then(mergeForwardBackwardOutputs));
  }

  /**
   * Reserves the next seq id now and sends at once (the server orders by seq id, not arrival),
   * retrying transient failures with the same seq id (the server dedupes them). Why not wait
   * for the previous submission's acceptance, as the SDK's turn queue does: each wait is a
   * round trip, and the order it buys is the one the server keeps anyway. While a custom
   * loss's backward waits for its seq id, the submission queues behind it instead (`#tail`).
   */
  #submit<T>(
    path: string,
    body: (seqId: number) => Submission,
    decoder: ResultDecoder<T>,
  ): APIFuture<T> {
    const ahead = this.#tail;
    if (ahead === null) return this.#send(path, body, decoder);
    const numbered = signal();
    this.#queueBehind(numbered.promise);
    return new APIFuture(ahead.then(() => {
      try {
        return this.#send(path, body, decoder).result();
      } finally {
        numbered.resolve();
      }
    }));
  }

  /** Makes later submissions wait for `numbered` too (after what they already wait for). */
  #queueBehind(numbered: Promise<void>): void {
    const tail = (this.#tail ?? Promise.resolve()).then(() => numbered);
    this.#tail = tail;
    void tail.then(() => {
      if (this.#tail === tail) this.#tail = null;
    });
  }

  /** Takes the next seq id and sends (see {@link TrainingClient.#submit}). */
  #send<T>(
    path: string,
    body: (seqId: number) => Submission,
    decoder: ResultDecoder<T>,
  ): APIFuture<T> {
    const seqId = ++this.#seq;
    const payload = body(seqId);
    const accepted = submitWithRetries(this.#ctx, path, payload);
    return new APIFuture(
      accepted.then((requestId) => awaitResult(this.#ctx, path, payload, requestId, decoder)),
    );
  }
}

/**
 * A promise and the function that resolves it. Not `Promise.withResolvers`: this client is also
 * the npm package, which supports Node 20, where that arrived only in Node 22.
 */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => resolve = r);
  return { promise, resolve };
}
