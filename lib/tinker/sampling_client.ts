/**
 * Sampling from a base model or from trained weights on a Tinker-compatible server.
 *
 * @module
 */

import type { Tokenizer } from "../tokenizers/types.ts";
import type { ModelInput, SampleResponse } from "../protocol/mod.ts";
import { APIFuture } from "./futures.ts";
import type { TinkerHttp } from "./http.ts";
import { awaitResult, submitWithRetries } from "./retry.ts";
import type { SamplingParams } from "./types.ts";

/** Arguments of {@link SamplingClient.sample}. */
export interface SampleArgs {
  /** The prompt's tokens. */
  prompt: ModelInput;
  /** Continuations to draw (default 1). */
  numSamples?: number;
  /** Length, temperature, top-k/p, seed and stop sequences. */
  samplingParams?: SamplingParams;
  /** Also return log p(prompt[t] | prompt[<t]) for every prompt token (first is null). */
  includePromptLogprobs?: boolean;
  /** Also return the top-k alternatives at every prompt position. */
  topkPromptLogprobs?: number;
}

/** Samples from one set of weights (a sampling session). */
export class SamplingClient {
  /** The server's id of the sampling session. */
  readonly samplingSessionId: string;
  /** The base model ("" for a sampler made from a `tinker://` path). */
  readonly baseModel: string;
  readonly #http: TinkerHttp;
  readonly #backoffBaseMs: number;
  readonly #slots: Semaphore;
  readonly #tokenizers: ((baseModel: string) => Tokenizer) | undefined;
  #seq = 0;

  /** `maxInFlight` bounds concurrent sample requests (the rest wait their turn client-side). */
  constructor(
    http: TinkerHttp,
    samplingSessionId: string,
    baseModel: string,
    { backoffBaseMs = 1_000, maxInFlight = 256, tokenizers }: {
      backoffBaseMs?: number;
      maxInFlight?: number;
      /** A base model's tokenizer (ServiceClientOptions.tokenizers). */
      tokenizers?: (baseModel: string) => Tokenizer;
    } = {},
  ) {
    this.#tokenizers = tokenizers;
    this.#http = http;
    this.samplingSessionId = samplingSessionId;
    this.baseModel = baseModel;
    this.#backoffBaseMs = backoffBaseMs;
    this.#slots = new Semaphore(maxInFlight);
  }

  /** Draws `numSamples` continuations of `prompt`, with the sampler's per-token log-probs. */
  sample(args: SampleArgs): APIFuture<SampleResponse> {
    const p = args.samplingParams ?? {};
    const body = {
      sampling_session_id: this.samplingSessionId,
      seq_id: this.#seq++,
      num_samples: args.numSamples ?? 1,
      prompt: args.prompt,
      sampling_params: {
        max_tokens: p.maxTokens,
        temperature: p.temperature ?? 1,
        top_k: p.topK ?? -1,
        top_p: p.topP ?? 1,
        seed: p.seed,
        stop: p.stop,
      },
      prompt_logprobs: args.includePromptLogprobs ?? false,
      topk_prompt_logprobs: args.topkPromptLogprobs ?? 0,
      type: "sample",
    };
    return new APIFuture(this.#run(body));
  }

  /** The tokenizer of the sampled model (known for base-model samplers; see getTokenizer). */
  getTokenizer(): Tokenizer {
    if (!this.baseModel) {
      throw new Error(
        "this sampler was made from a tinker:// path: use getTokenizer(<base model>)",
      );
    }
    if (!this.#tokenizers) {
      throw new Error(
        `no tokenizer for ${this.baseModel}: pass \`tokenizers\` to ServiceClient.connect`,
      );
    }
    return this.#tokenizers(this.baseModel);
  }

  /** Log-probs of every token of `prompt` given its prefix (the first is null). */
  computeLogprobs(prompt: ModelInput): APIFuture<(number | null)[]> {
    const f = this.sample({
      prompt,
      numSamples: 1,
      samplingParams: { maxTokens: 1 },
      includePromptLogprobs: true,
    });
    return new APIFuture(f.result().then((r) => r.prompt_logprobs ?? []));
  }

  async #run(body: Record<string, unknown>): Promise<SampleResponse> {
    const ctx = { http: this.#http, backoffBaseMs: this.#backoffBaseMs };
    await this.#slots.acquire();
    try {
      // A 429 on submit is back-pressure: submitWithRetries backs off and resubmits.
      const requestId = await submitWithRetries(ctx, "asample", { json: body });
      return await awaitResult(ctx, "asample", { json: body }, requestId, { proto: "sample" });
    } finally {
      this.#slots.release();
    }
  }
}

/** Counts free slots; waiters are served in arrival order. */
class Semaphore {
  #free: number;
  #waiting: Array<() => void> = [];

  constructor(size: number) {
    this.#free = size;
  }

  acquire(): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}
