/**
 * Starting the runs server: the service on a data dir behind the HTTP app, listening on a port
 * (loopback by default).
 *
 * @example
 * const server = await startRunsServer({
 *   dataDir: await Deno.makeTempDir(),
 *   port: 0,
 *   evaluator: { evaluateHeldOut, heldOutEnvironment }, // lib/trainer/evaluate.ts
 * });
 * const runs = new RunsClient({ baseUrl: server.url });
 * console.log(await runs.listEnvironments());
 * await server.close();
 *
 * @module
 */

import { ensurePortFree, serveHttp } from "../http/mod.ts";
import { createRunsApp } from "./app.ts";
import { RunsService, type RunsServiceOptions } from "./service.ts";

/** Options of {@link startRunsServer}. */
export interface RunsServerOptions extends RunsServiceOptions {
  /** Port (default 8080, the Hermes tools' default; 0 picks a free one). */
  port?: number;
  /** Interface (default 127.0.0.1). */
  hostname?: string;
  /**
   * Require `Authorization: Bearer <apiKey>`. `deno task runs` always passes one (the data
   * dir's, see api_key.ts) unless started with `--no-auth` on loopback.
   */
  apiKey?: string;
}

/** A running runs server. */
export interface RunsServer {
  url: string;
  /** Where it listens, e.g. `127.0.0.1:8080`. */
  address: string;
  port: number;
  service: RunsService;
  /** Stops listening and watching; training processes keep going. */
  close(): Promise<void>;
}

/** Opens the service and serves it over HTTP. */
export async function startRunsServer(o: RunsServerOptions): Promise<RunsServer> {
  const hostname = o.hostname ?? "127.0.0.1";
  const port = o.port ?? 8080;
  // Refused before the service opens (and leases) the data dir.
  ensurePortFree(hostname, port, "--port");
  const service = await RunsService.open(o);
  const app = createRunsApp(service, { apiKey: o.apiKey, hostname });
  const server = await serveHttp(app.fetch, {
    hostname,
    port,
    portFlag: "--port",
    owned: service,
  });
  return {
    url: server.url,
    address: server.address,
    port: server.port,
    service,
    close: server.close,
  };
}
