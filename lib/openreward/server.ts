/**
 * Serving the ORS app ({@link createOrsApp}) on a port, with the reaper that ends idle sessions.
 *
 * @module
 */

import { ensurePortFree, serveHttp } from "../http/mod.ts";
import { createOrsApp, type OrsApp, type OrsAppOptions } from "./app.ts";

/** A running ORS server. */
export interface OrsServer {
  url: string;
  /** Where it listens, e.g. `127.0.0.1:8080`. */
  address: string;
  port: number;
  app: OrsApp;
  close(): Promise<void>;
}

/**
 * Serves tool environments over ORS on a port (0: a free one), with the idle reaper running.
 * A taken port is a `PortInUseError` naming `--port`.
 *
 * @example
 * const server = await startOrsServer({ environments: [whoDunIt("easy")], port: 0 });
 * const client = new OrsClient({ baseUrl: server.url });
 * await server.close();
 */
export async function startOrsServer(
  opts: OrsAppOptions & { port?: number; hostname?: string; reapEveryMs?: number },
): Promise<OrsServer> {
  const hostname = opts.hostname ?? "127.0.0.1";
  const port = opts.port ?? 0;
  ensurePortFree(hostname, port, "--port");
  const app = createOrsApp(opts);
  const server = await serveHttp((req) => app.fetch(req), { hostname, port, portFlag: "--port" })
    .catch(async (e) => {
      await app.close();
      throw e;
    });
  const reaper = setInterval(() => void app.reap(), opts.reapEveryMs ?? 5000);
  return {
    url: server.url,
    address: server.address,
    port: server.port,
    app,
    async close() {
      clearInterval(reaper);
      await app.close();
      await server.close();
    },
  };
}
