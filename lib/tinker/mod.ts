/**
 * The Tinker client, written with `fetch`: a {@link ServiceClient} session, LoRA
 * {@link TrainingClient}s and {@link SamplingClient}s, with futures that pipeline.
 *
 * @module
 */

export {
  type LoraTrainingOptions,
  ServiceClient,
  type ServiceClientOptions,
  type TokenizerLoader,
} from "./service_client.ts";
export { type CustomLossFn, TrainingClient } from "./training_client.ts";
export { type SampleArgs, SamplingClient } from "./sampling_client.ts";
export {
  type CheckpointArchive,
  type CheckpointsPage,
  RestClient,
  type SessionInfo,
  type SessionsPage,
  type TrainingRun,
  type TrainingRunsPage,
  type WeightsInfo,
} from "./rest_client.ts";
export { type ChunkLimits, mergeForwardBackwardOutputs } from "./chunking.ts";
export { APIFuture, RequestFailedError } from "./futures.ts";
export {
  TINKER_CLOUD_URL,
  TinkerAPIError,
  TinkerAuthenticationError,
  TinkerConnectionError,
  TinkerResponseError,
} from "./http.ts";
export {
  type AdamParams,
  datum,
  ModelInput,
  type ModelInputHelpers,
  type SamplingParams,
  TensorData,
  type TensorDataHelpers,
} from "./types.ts";
export { TinkerHttp, type TinkerHttpOptions } from "./http.ts";
// The wire types the clients' signatures name.
export type { Datum, ForwardBackwardOutput, SampleResponse } from "../protocol/mod.ts";
export type { Tokenizer } from "../tokenizers/types.ts";
