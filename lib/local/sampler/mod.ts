/**
 * The local backend's sampler: batched KV-cache generation with host-side token draws.
 *
 * @module
 */

export { LocalSampler, type LocalSamplerOptions } from "./sampler.ts";
export { PrefixCache } from "./prefix_cache.ts";
export {
  type AnyPrefixCache,
  defaultSamplerEngine,
  prefixCacheFor,
  SAMPLER_ENGINE_ENV,
  type SamplerEngine,
  SamplerEngineSchema,
} from "./engines.ts";
export type { SampledSequence, SampleJob, SampleResult, StopReason } from "./types.ts";
export { MAX_SAMPLES_PER_JOB, validateSampleJob } from "./validate.ts";
