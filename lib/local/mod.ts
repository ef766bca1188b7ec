/**
 * The embedded local backend as a library: its Tinker-compatible server, the connection that
 * picks the cloud (with `TINKER_API_KEY`) or starts this server, and the models it serves.
 * Importing it loads ONNX Runtime's native library; the client (`lib/tinker`) does not.
 *
 * @module
 */

export {
  defaultDataDir,
  type LocalServer,
  type LocalServerOptions,
  startLocalServer,
} from "./server/mod.ts";
export { type FaultConfig, FaultConfigSchema } from "./server/faults.ts";
export { connectTinker, type TinkerConnection } from "./connect.ts";
export { findLocalModel, LOCAL_MODELS, type LocalModelSpec } from "./models.ts";
export { type LoraSpec, type ModelConfig, ModelConfigSchema } from "./model/config.ts";
// Types the server's options and handle name.
export { type LocalAuth, type LocalAuthOptions, LocalAuthOptionsSchema } from "./server/auth.ts";
export type { FaultDecision, FaultInjector } from "./server/faults.ts";
export type { LocalBackend, LocalBackendOptions } from "./backend.ts";
export { type PrefixCache, type SamplerEngine, SamplerEngineSchema } from "./sampler/mod.ts";
export { LoraSpecSchema } from "./model/config.ts";
export type {
  CheckpointInfo,
  CheckpointMeta,
  CheckpointStore,
  CheckpointTensors,
  RunInfo,
} from "./checkpoints.ts";
export type { FutureKind, FutureState, FutureStore } from "./runtime/futures.ts";
export type { PrefixHit } from "./sampler/prefix_cache.ts";
export type { KvCache } from "./sampler/device.ts";
export type { ComputeQueue } from "./runtime/compute_queue.ts";
export type { Cursor } from "./backend/rest_views.ts";
export type { HostTensor, NamedTensors } from "./tensors.ts";
