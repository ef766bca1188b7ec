import type { SampleJob } from "../../lib/local/sampler/types.ts";

/** A sampler job with the protocol's defaults (3 prompt tokens, 8 new, temperature 1); tests override fields. */
export function sampleJob(over: Partial<SampleJob> = {}): SampleJob {
  return {
    prompt: Int32Array.from([1, 2, 3]),
    numSamples: 1,
    maxTokens: 8,
    temperature: 1,
    topK: -1,
    topP: 1,
    stopTokens: [],
    stopSequences: [],
    promptLogprobs: false,
    topkPromptLogprobs: 0,
    ...over,
  };
}
