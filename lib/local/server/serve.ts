/**
 * Starting the embedded local backend: a Tinker-compatible HTTP server on this machine,
 * in-process (from code, tests and notebooks) or standalone (`deno task serve`).
 *
 * @example
 * const server = await startLocalServer({ dataDir: await Deno.makeTempDir() });
 * // … point a ServiceClient at server.url …
 * await server.close();
 *
 * @module
 */

import { defaultDataDir } from "./data_dir.ts";
import { LocalBackend } from "../backend.ts";
import { createApp } from "./app.ts";
import { type FaultConfig, FaultInjector } from "./faults.ts";
import { initEngine } from "../engine.ts";
import { LocalAuth, type LocalAuthOptions } from "./auth.ts";
import { ensurePortFree, serveHttp } from "../../http/mod.ts";
import type { SamplerEngine } from "../sampler/mod.ts";

/** Options of {@link startLocalServer}. */
export interface LocalServerOptions {
  /** Port to listen on; 0 (the default) picks a free one. */
  port?: number;
  /** Interface to bind; loopback by default. */
  hostname?: string;
  /** The CLI flag that sets the port, named when it is taken (default `--port`). */
  portFlag?: string;
  /** Checkpoint directory; default `$TINKERBENCH_HOME` or `~/.cache/tinkerbench/local`. */
  dataDir?: string;
  /** How long retrieve_future waits for a result before answering try_again (< 45 s). */
  longPollMs?: number;
  /** Session expiry without heartbeat (0 = never). */
  sessionTtlMs?: number;
  /** Seq-id gap timeout per model. */
  seqGapTimeoutMs?: number;
  /** Device bytes of the samplers' prefix cache; 0 turns it off (see {@link LocalBackendOptions}). */
  prefixCacheBytes?: number;
  /** The engine samplers decode on (see {@link LocalBackendOptions}). */
  samplerEngine?: SamplerEngine;
  /** Fault injection for client tests; off when absent. */
  faults?: Partial<FaultConfig>;
  /** Log one line per request. */
  log?: boolean;
  /**
   * Require credentials the way the hosted service does with JWT exchange: `client/config`
   * says `pjwt_auth_enabled`, `auth/token` trades `apiKey` for a JWT living `jwtTtlSeconds`,
   * and other calls need a valid JWT (401 otherwise). Off by default: any key is accepted.
   */
  auth?: LocalAuthOptions;
}

/** A running local server. */
export interface LocalServer {
  /** Base URL to give a Tinker client, e.g. `http://127.0.0.1:43123`. */
  url: string;
  /** Where it listens, e.g. `0.0.0.0:8000`. */
  address: string;
  /** The port it listens on. */
  port: number;
  /** The backend it serves. */
  backend: LocalBackend;
  /** The fault injector, when started with faults. */
  faults?: FaultInjector;
  /** The credential checks, when started with `auth`. */
  auth?: LocalAuth;
  /** Stops listening, waits for queued work, and frees the models. */
  close(): Promise<void>;
}

export { defaultDataDir } from "./data_dir.ts";

/** Starts the local backend and resolves once it is listening. */
export async function startLocalServer(opts: LocalServerOptions = {}): Promise<LocalServer> {
  const hostname = opts.hostname ?? "127.0.0.1";
  const portFlag = opts.portFlag ?? "--port";
  // A taken port is refused before the engine loads or the data dir is made.
  ensurePortFree(hostname, opts.port ?? 0, portFlag);
  await initEngine();
  const dataDir = opts.dataDir ?? defaultDataDir();
  await Deno.mkdir(dataDir, { recursive: true });
  const backend = new LocalBackend({
    dataDir,
    sessionTtlMs: opts.sessionTtlMs,
    seqGapTimeoutMs: opts.seqGapTimeoutMs,
    prefixCacheBytes: opts.prefixCacheBytes,
    samplerEngine: opts.samplerEngine,
  });
  const faults = opts.faults ? new FaultInjector(opts.faults) : undefined;
  const auth = opts.auth ? new LocalAuth(opts.auth) : undefined;
  const app = createApp(backend, { longPollMs: opts.longPollMs ?? 20_000, faults, auth });
  const server = await serveHttp(async (req) => {
    const t0 = performance.now();
    const res = await app.fetch(req);
    if (opts.log) {
      const ms = (performance.now() - t0).toFixed(0);
      console.log(`${req.method} ${new URL(req.url).pathname} ${res.status} ${ms}ms`);
    }
    return res;
  }, { hostname, port: opts.port ?? 0, portFlag }).catch(async (e) => {
    await backend.close();
    throw e;
  });
  return {
    url: server.url,
    address: server.address,
    port: server.port,
    backend,
    faults,
    auth,
    async close() {
      await server.close();
      await backend.close();
    },
  };
}
