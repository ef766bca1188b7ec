/**
 * What the local sampler is asked for and what it returns, in engine terms (token ids,
 * camelCase); the server maps Tinker's `SamplingParams` onto these.
 *
 * @module
 */

/** One prompt to sample `numSamples` continuations of. */
export interface SampleJob {
  /** Prompt token ids; at least one. */
  prompt: Int32Array;
  /** Independent continuations to draw from the same prompt. */
  numSamples: number;
  /** Maximum new tokens per continuation. */
  maxTokens: number;
  /** Softmax temperature; 0 means greedy (argmax). */
  temperature: number;
  /** Keep only the k most likely tokens; -1 disables. */
  topK: number;
  /** Nucleus sampling: keep the smallest set of tokens with probability ≥ topP; 1 disables. */
  topP: number;
  /** Seed: equal seed, weights and prompt give equal tokens. Absent: a random seed. */
  seed?: number;
  /** Single-token stops: generation ends after emitting one of these. */
  stopTokens: number[];
  /** Multi-token stops (tokenized stop strings): generation ends when one is completed. */
  stopSequences: number[][];
  /** Return the log-probability of every prompt token given its prefix. */
  promptLogprobs: boolean;
  /** Return the top-k alternatives at every prompt position; 0 disables. */
  topkPromptLogprobs: number;
}

/** Why a continuation ended. */
export type StopReason = "stop" | "length";

/** One sampled continuation. */
export interface SampledSequence {
  /** Generated token ids, including the stop token or stop sequence that ended it. */
  tokens: number[];
  /**
   * `log p(token | prefix)` of each generated token under the model's raw distribution
   * (log-softmax of the logits at temperature 1, before top-k/top-p), aligned with `tokens`.
   */
  logprobs: number[];
  stopReason: StopReason;
}

/** The result of one {@link SampleJob}. */
export interface SampleResult {
  /** `numSamples` continuations, in sample order. */
  sequences: SampledSequence[];
  /** Per prompt token `log p(prompt[t] | prompt[<t])`; the first entry is null. */
  promptLogprobs?: (number | null)[];
  /** Per prompt position the top-k `[tokenId, logprob]` pairs, best first; first is null. */
  topkPromptLogprobs?: ([number, number][] | null)[];
}
