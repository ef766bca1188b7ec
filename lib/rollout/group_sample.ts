/**
 * A group's first turn as one sample request. Every episode of a GRPO group starts from the
 * same prompt, so their first actions are one request with `num_samples` = the group's size,
 * not one request each: a one-turn group of 8 sends 1 sample request and 1 poll instead of 8
 * and 8, and the sampler reads the prompt once. Later turns differ per episode and are sampled
 * one by one.
 *
 * @module
 */

import type { SampleResponse } from "../protocol/mod.ts";
import type { ModelInput, SampleArgs } from "../tinker/mod.ts";
import type { Sampler } from "./episode.ts";

/**
 * The shared first turn of one group's episodes. The request is sent by the first episode
 * that asks, with the group's seed; episode `i` is answered with sample `i`. A sampler seeded
 * this way replays exactly: sample `i` of a seeded request draws the same tokens whatever else
 * the server batches with it.
 *
 * @example
 * const first = new GroupFirstTurn(sampler, 8, deriveSeed(seed, g, -1));
 * const episode = await runEpisode(env, opening, first.episodeSampler(3), opts);
 */
export class GroupFirstTurn {
  readonly #sampler: Sampler;
  readonly #size: number;
  readonly #seed: number | undefined;
  #request?: { args: SampleArgs; response: Promise<SampleResponse> };

  /** `size` samples of the first prompt asked for, drawn with `seed` (none: the server's). */
  constructor(sampler: Sampler, size: number, seed: number | undefined) {
    this.#sampler = sampler;
    this.#size = size;
    this.#seed = seed;
  }

  /**
   * Episode `i`'s sampler: its first call is answered with sample `i` of the group's request,
   * later calls go to the sampler itself.
   */
  episodeSampler(i: number): Sampler {
    let first = true;
    return {
      sample: (args) => {
        if (!first) return this.#sampler.sample(args);
        first = false;
        return this.#take(args, i);
      },
    };
  }

  async #take(args: SampleArgs, i: number): Promise<SampleResponse> {
    this.#request ??= {
      args,
      response: Promise.resolve(this.#sampler.sample({
        ...args,
        numSamples: this.#size,
        samplingParams: { ...args.samplingParams, seed: this.#seed },
      })),
    };
    // Episodes of a group render the same opening with the same settings; one that does not
    // (an environment whose spawned copies differ) is sampled on its own.
    if (!sameRequest(this.#request.args, args)) return await this.#sampler.sample(args);
    const res = await this.#request.response;
    const seq = res.sequences[i];
    if (!seq) {
      throw new Error(
        `the sampler answered a request for ${this.#size} samples with ${res.sequences.length}`,
      );
    }
    return { ...res, sequences: [seq] };
  }
}

/** The same prompt and sampling settings, the seed aside. */
function sameRequest(a: SampleArgs, b: SampleArgs): boolean {
  const { seed: _a, ...pa } = a.samplingParams ?? {};
  const { seed: _b, ...pb } = b.samplingParams ?? {};
  return (a.numSamples ?? 1) === (b.numSamples ?? 1) && samePrompt(a.prompt, b.prompt) &&
    JSON.stringify(pa) === JSON.stringify(pb) &&
    a.includePromptLogprobs === b.includePromptLogprobs &&
    a.topkPromptLogprobs === b.topkPromptLogprobs;
}

function samePrompt(a: ModelInput, b: ModelInput): boolean {
  if (a === b) return true;
  if (a.chunks.length !== b.chunks.length) return false;
  return a.chunks.every((ca, k) => {
    const cb = b.chunks[k];
    if (ca.type !== "encoded_text" || cb.type !== "encoded_text") {
      return JSON.stringify(ca) === JSON.stringify(cb);
    }
    return ca.tokens.length === cb.tokens.length && ca.tokens.every((t, j) => t === cb.tokens[j]);
  });
}
