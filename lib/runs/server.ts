/**
 * Starting the runs server: the service on a data dir behind the HTTP app, listening on a port
 * (loopback by default).
 *
 * @example
 * const server = await startRunsServer({ dataDir: await Deno.makeTempDir(), port: 0 });
 * const runs = new RunsClient({ baseUrl: server.url });
 * console.log(await runs.listEnvironments());
 * await server.close();
 *
 * @module
 */

import { createRunsApp } from "./app.ts";
import { RunsService, type RunsServiceOptions } from "./service.ts";

/** Options of {@link startRunsServer}. */
export interface RunsServerOptions extends RunsServiceOptions {
  /** Port (default 8080, the Hermes tools' default; 0 picks a free one). */
  port?: number;
  /** Interface (default 127.0.0.1). */
  hostname?: string;
  /** Require `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
}

/** A running runs server. */
export interface RunsServer {
  url: string;
  port: number;
  service: RunsService;
  /** Stops listening and watching; training processes keep going. */
  close(): Promise<void>;
}

/** Opens the service and serves it over HTTP. */
export async function startRunsServer(o: RunsServerOptions): Promise<RunsServer> {
  const service = await RunsService.open(o);
  const app = createRunsApp(service, { apiKey: o.apiKey });
  const hostname = o.hostname ?? "127.0.0.1";
  const abort = new AbortController();
  const { promise: listening, resolve } = Promise.withResolvers<number>();
  let server: Deno.HttpServer;
  try {
    server = Deno.serve({
      port: o.port ?? 8080,
      hostname,
      signal: abort.signal,
      onListen: ({ port }) => resolve(port),
    }, app.fetch);
  } catch (e) {
    await service.close();
    throw e;
  }
  const port = await listening;
  const host = hostname.includes(":") ? `[${hostname}]` : hostname;
  return {
    url: `http://${host}:${port}`,
    port,
    service,
    async close() {
      abort.abort();
      await server.finished;
      await service.close();
    },
  };
}
