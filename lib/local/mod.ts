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
