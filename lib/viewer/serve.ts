/**
 * The run viewer served live (`deno task report --serve RUN_DIR`): the same page, its data read
 * again from the run directory on each request, and `data.json?after=N` for the steps after
 * step N, which the page polls so a run can be watched while it trains.
 *
 * @module
 */

import { type Context, Hono } from "hono";
import { z } from "zod";
import { serveHttp } from "../http/serve.ts";
import { plotlyJsSource } from "../viz/mod.ts";
import { browserLibSource } from "./bundle.ts";
import { loadViewerData } from "./data.ts";
import { viewerHtml, viewerJsSource } from "./page.ts";

/** Options of {@link startViewerServer}. */
export interface ViewerServerOptions {
  /** The run directories to show. */
  dirs: string[];
  /** Default 8070; 0 picks a free port. */
  port?: number;
  /** Default 127.0.0.1 (loopback only). */
  hostname?: string;
  /** The flag that sets the port, named when it is taken (default `--port`). */
  portFlag?: string;
}

/** A running viewer server. */
export interface ViewerServer {
  /** The page's URL. */
  url: string;
  /** The port it listens on. */
  port: number;
  /** Stops the server. */
  close(): Promise<void>;
}

const QuerySchema = z.object({ after: z.coerce.number().int().min(0).default(0) });

/** The viewer's HTTP app over run directories. */
export function createViewerApp(dirs: string[]): Hono {
  const app = new Hono();
  const js = (text: () => string) => (c: Context) =>
    c.body(text(), 200, { "content-type": "text/javascript; charset=utf-8" });
  app.get(
    "/",
    async (c) => c.html(viewerHtml(await loadViewerData(dirs, { live: true }), "assets")),
  );
  app.get("/assets/plotly.min.js", js(() => plotlyJsSource("basic")));
  app.get("/assets/viewer.js", js(viewerJsSource));
  app.get("/assets/tinkerbench.js", async (c) => {
    try {
      return c.body(await browserLibSource(), 200, {
        "content-type": "text/javascript; charset=utf-8",
      });
    } catch (e) {
      return c.text((e as Error).message, 503);
    }
  });
  app.get("/data.json", async (c) => {
    const q = QuerySchema.safeParse(c.req.query());
    if (!q.success) return c.json({ error: "after: a step number (integer >= 0)" }, 400);
    return c.json(await loadViewerData(dirs, { afterStep: q.data.after, live: true }));
  });
  return app;
}

/**
 * Serves the viewer of `dirs` (through lib/http's {@link serveHttp}); resolves once listening.
 * A taken port is lib/http's `PortInUseError`, naming `portFlag`.
 */
export async function startViewerServer(o: ViewerServerOptions): Promise<ViewerServer> {
  const server = await serveHttp(createViewerApp(o.dirs).fetch, {
    port: o.port ?? 8070,
    hostname: o.hostname ?? "127.0.0.1",
    portFlag: o.portFlag ?? "--port",
  });
  return { url: `${server.url}/`, port: server.port, close: () => server.close() };
}
