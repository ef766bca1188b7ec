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
  CheckpointArchiveSchema,
  type CheckpointsPage,
  CheckpointsPageSchema,
  RestClient,
  type SessionInfo,
  SessionInfoSchema,
  type SessionsPage,
  SessionsPageSchema,
  type TrainingRun,
  type TrainingRunsPage,
  TrainingRunsPageSchema,
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
export { type RawReply, TinkerHttp, type TinkerHttpOptions } from "./http.ts";
// The wire types the clients' signatures name, and the schemas that define them.
export type {
  Datum,
  ForwardBackwardOutput,
  ModelInput as WireModelInput,
  SampleResponse,
  TensorData as WireTensorData,
} from "../protocol/mod.ts";
export type {
  CreateModelRequest,
  CreateSamplingSessionRequest,
  GetInfoResponse,
  GetServerCapabilitiesResponse,
  LoadWeightsRequest,
  SampleRequest,
  SaveWeightsForSamplerRequest,
  SaveWeightsRequest,
  WeightsInfoResponse,
} from "../protocol/mod.ts";
export type { CheckpointKind, TinkerPath } from "../protocol/paths.ts";
export {
  AdamParamsSchema,
  CheckpointSchema,
  ChunkSchema,
  CreateModelRequestSchema,
  CreateSamplingSessionRequestSchema,
  CursorSchema,
  DatumSchema,
  DmelChunkSchema,
  EncodedTextChunkSchema,
  ForwardBackwardOutputSchema,
  GetInfoResponseSchema,
  GetServerCapabilitiesResponseSchema,
  ImageAssetPointerChunkSchema,
  ImageChunkSchema,
  LoadWeightsRequestSchema,
  LoraConfigSchema,
  ModelInputSchema,
  SampledSequenceSchema,
  SampleRequestSchema,
  SampleResponseSchema,
  SamplingParamsSchema,
  SaveWeightsForSamplerRequestSchema,
  SaveWeightsRequestSchema,
  StopReasonSchema,
  TensorDataSchema,
  TensorValuesSchema,
  TrainingRunSchema,
  WeightsInfoResponseSchema,
} from "../protocol/mod.ts";
export type { Tokenizer } from "../tokenizers/types.ts";
