/**
 * The proxy on a port: {@link startProxy} serves the app (app.ts) through `serveHttp`, and closes
 * gracefully, answering the requests in flight before it stops.
 *
 * @module
 */

import { serveHttp } from "../http/mod.ts";
import { createProxyApp, type ProxyApp } from "./app.ts";
import type { ProxyOptions } from "./options.ts";
import { ProxyError } from "./errors.ts";

/** A running proxy. */
export interface RunningProxy extends ProxyApp {
  /** Base URL of the OpenAI API for a local client, e.g. `http://127.0.0.1:30000/v1`. */
  url: string;
  /** Where it listens, e.g. `0.0.0.0:30000`. */
  address: string;
  port: number;
  /**
   * Answers the requests in flight (new ones get a 503 `proxy_stopping` meanwhile), then stops
   * listening and ends every session (pending turns complete without a next state).
   */
  close(): Promise<void>;
}

/**
 * Starts the proxy on `hostname:port` (port 0: a free one). A taken port is a
 * `PortInUseError` naming `portFlag` (default `--proxy-port`).
 *
 * @example
 * const proxy = await startProxy({ policy, renderer, modelName: "local/games",
 *   contextLength: 1024, hostname: "127.0.0.1", port: 0 });
 * const client = new OpenAI({ baseURL: proxy.url, apiKey: "none" });
 */
export async function startProxy(
  o: ProxyOptions & { hostname?: string; port?: number; portFlag?: string },
): Promise<RunningProxy> {
  const proxy = createProxyApp(o);
  // Requests being answered: closing waits for them (a run at --max-steps answers what its
  // agents asked before it stops), and answers new ones with a 503 meanwhile.
  const inFlight = new Set<Promise<void>>();
  let stopping = false;
  const handler = (req: Request, info: Deno.ServeHandlerInfo) => {
    if (stopping) {
      const e = new ProxyError(503, "the proxy is stopping (its training run has ended)", {
        code: "proxy_stopping",
      });
      const anthropic = new URL(req.url).pathname.startsWith("/v1/messages");
      return Response.json(
        anthropic
          ? { type: "error", error: { type: "overloaded_error", message: e.message } }
          : e.body(),
        { status: 503 },
      );
    }
    const done = info.completed.then(() => {}, () => {});
    inFlight.add(done);
    done.then(() => inFlight.delete(done));
    return proxy.app.fetch(req, info);
  };
  const server = await serveHttp(handler, {
    hostname: o.hostname ?? "0.0.0.0",
    port: o.port ?? 30000,
    portFlag: o.portFlag ?? "--proxy-port",
    owned: proxy.sessions,
  });
  return {
    ...proxy,
    url: `${server.url}/v1`,
    address: server.address,
    port: server.port,
    async close() {
      stopping = true;
      while (inFlight.size) await Promise.all([...inFlight]);
      await server.close();
    },
  };
}
