/**
 * The run viewer served live (`deno task report --serve RUN_DIR`): the same page, its data read
 * again from the run directory on each request, and `data.json?after=N` for the steps after
 * step N, which the page polls so a run can be watched while it trains.
 *
 * @module
 */

import { type Context, Hono } from "hono";
import { z } from "zod";
import { plotlyJsSource } from "../viz/mod.ts";
import { loadViewerData } from "./data.ts";
import { viewerHtml, viewerJsSource } from "./page.ts";

/** Options of {@link startViewerServer}. */
export interface ViewerServerOptions {
  dirs: string[];
  /** Default 8070; 0 picks a free port. */
  port?: number;
  /** Default 127.0.0.1 (loopback only). */
  hostname?: string;
}

/** A running viewer server. */
export interface ViewerServer {
  url: string;
  port: number;
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
  app.get("/data.json", async (c) => {
    const q = QuerySchema.safeParse(c.req.query());
    if (!q.success) return c.json({ error: "after: a step number (integer >= 0)" }, 400);
    return c.json(await loadViewerData(dirs, { afterStep: q.data.after, live: true }));
  });
  return app;
}

/** Serves the viewer of `dirs`; resolves once listening. */
export async function startViewerServer(o: ViewerServerOptions): Promise<ViewerServer> {
  const hostname = o.hostname ?? "127.0.0.1";
  const abort = new AbortController();
  const { promise: listening, resolve } = Promise.withResolvers<number>();
  const server = Deno.serve({
    port: o.port ?? 8070,
    hostname,
    signal: abort.signal,
    onListen: ({ port }) => resolve(port),
  }, createViewerApp(o.dirs).fetch);
  const port = await listening;
  const host = hostname.includes(":") ? `[${hostname}]` : hostname;
  return {
    url: `http://${host}:${port}/`,
    port,
    async close() {
      abort.abort();
      await server.finished;
    },
  };
}
