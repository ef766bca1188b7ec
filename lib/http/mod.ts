/**
 * What every HTTP server of the project shares (the local backend, the proxy, the run API, the
 * ORS environment server): serving on a port, JSON error answers, bearer keys compared in
 * constant time, and bodies read with a size limit.
 *
 * @module
 */

export { badRequest, HttpError, type JsonErrorOptions, jsonErrors } from "./errors.ts";
export {
  type BodyOptions,
  concatBytes,
  DEFAULT_MAX_BODY_BYTES,
  parseJsonBytes,
  readBytes,
  readJson,
} from "./body.ts";
export { keyAuth, type KeyAuthOptions, sameSecret } from "./auth.ts";
export {
  ensurePortFree,
  type HttpServer,
  isLoopback,
  openDoorWarning,
  PortInUseError,
  serveHttp,
  type ServeOptions,
} from "./serve.ts";
export { startRecorder } from "./recorder.ts";
export {
  READY_FILE_USAGE,
  type ReadyInfo,
  type ServerProcess,
  type ServerProcessOptions,
  startServerProcess,
  writeReadyFile,
} from "./ready.ts";
export { browserGuard, type BrowserGuardOptions } from "./guard.ts";
export {
  type ConnectionLimits,
  connectionLimits,
  ConnectionLimitsSchema,
  RequestTracker,
} from "./guard_conn.ts";
