/**
 * The local backend's sampler: batched KV-cache generation with host-side token draws.
 *
 * @module
 */

export { LocalSampler, type LocalSamplerOptions } from "./sampler.ts";
export { PrefixCache } from "./prefix_cache.ts";
export type { SampledSequence, SampleJob, SampleResult, StopReason } from "./types.ts";
export { MAX_SAMPLES_PER_JOB, validateSampleJob } from "./validate.ts";
