/**
 * Validation of sampling requests, so bad input fails with a precise 400 instead of a
 * shape error deep inside the engine.
 *
 * @module
 */

import { UserInputError } from "../errors.ts";
import type { ModelConfig } from "../model/config.ts";
import type { SampleJob } from "./types.ts";

/** Most continuations one job may ask for (each one is a row of the decode batch). */
export const MAX_SAMPLES_PER_JOB = 128;

/** Throws {@link UserInputError} unless `job` can be sampled from a model of `cfg`. */
export function validateSampleJob(cfg: ModelConfig, job: SampleJob): void {
  const fail = (msg: string) => {
    throw new UserInputError(msg);
  };
  if (job.prompt.length === 0) fail("prompt is empty: it needs at least one token");
  checkTokenIds(cfg, job.prompt, (i) => `prompt token ${i}`);
  if (!Number.isInteger(job.numSamples) || job.numSamples < 1) {
    fail(`num_samples must be an integer ≥ 1, got ${job.numSamples}`);
  }
  if (job.numSamples > MAX_SAMPLES_PER_JOB) {
    fail(
      `num_samples is ${job.numSamples}, the local backend allows at most ${MAX_SAMPLES_PER_JOB}`,
    );
  }
  if (!Number.isInteger(job.maxTokens) || job.maxTokens < 1) {
    fail(`max_tokens must be an integer ≥ 1, got ${job.maxTokens}`);
  }
  if (job.prompt.length + job.maxTokens > cfg.maxSeqLen) {
    fail(
      `prompt length ${job.prompt.length} + max_tokens ${job.maxTokens} = ` +
        `${
          job.prompt.length + job.maxTokens
        } exceeds the model's context of ${cfg.maxSeqLen} tokens`,
    );
  }
  if (!Number.isFinite(job.temperature) || job.temperature < 0) {
    fail(`temperature must be a finite number ≥ 0, got ${job.temperature}`);
  }
  if (!(job.topP > 0 && job.topP <= 1)) fail(`top_p must be in (0, 1], got ${job.topP}`);
  if (!Number.isInteger(job.topK) || (job.topK !== -1 && job.topK < 1)) {
    fail(`top_k must be -1 (off) or an integer ≥ 1, got ${job.topK}`);
  }
  if (job.seed !== undefined && !Number.isSafeInteger(job.seed)) {
    fail(`seed must be an integer, got ${job.seed}`);
  }
  checkTokenIds(cfg, job.stopTokens, (i) => `stop token ${i}`);
  job.stopSequences.forEach((seq, i) => {
    if (seq.length === 0) fail(`stop sequence ${i} is empty`);
    checkTokenIds(cfg, seq, (t) => `stop sequence ${i} token ${t}`);
  });
  if (!Number.isInteger(job.topkPromptLogprobs) || job.topkPromptLogprobs < 0) {
    fail(`topk_prompt_logprobs must be an integer ≥ 0, got ${job.topkPromptLogprobs}`);
  }
  if (job.topkPromptLogprobs > cfg.vocabSize) {
    fail(
      `topk_prompt_logprobs is ${job.topkPromptLogprobs}, more than the vocabulary (${cfg.vocabSize})`,
    );
  }
}

/** Throws unless every id is an integer in `[0, vocabSize)`, naming the first bad one. */
function checkTokenIds(
  cfg: ModelConfig,
  ids: ArrayLike<number>,
  label: (index: number) => string,
): void {
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (!Number.isInteger(id) || id < 0 || id >= cfg.vocabSize) {
      throw new UserInputError(
        `${label(i)} is ${id}, outside the vocabulary [0, ${cfg.vocabSize})`,
      );
    }
  }
}
