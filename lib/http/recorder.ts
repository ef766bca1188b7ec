/**
 * A forwarding server that sees every request pass: it answers each one by sending it on to
 * another server, and hands a copy to `onRequest` first. The SDK's requests are recorded this
 * way (`deno task compat:sdk --record`), and ours are compared through the same layer.
 *
 * @module
 */

import { type HttpServer, serveHttp } from "./serve.ts";

/**
 * Serves on a free loopback port, forwarding every request to `target` unchanged (streamed
 * answers included).
 *
 * @example
 * const seen: string[] = [];
 * const rec = await startRecorder(server.url, (req) => void seen.push(req.url));
 * // point a client at rec.url …
 * await rec.close();
 */
export async function startRecorder(
  target: string,
  onRequest: (req: Request) => void | Promise<void>,
): Promise<HttpServer> {
  return await serveHttp(async (req) => {
    const url = new URL(req.url);
    const headers = new Headers(req.headers);
    headers.delete("host");
    const body = req.body ? await req.arrayBuffer() : undefined;
    // Copies from parts: copying `req` whole reads its signal, which Deno aborts (and warns
    // about) once the answer is sent.
    await onRequest(new Request(url, { method: req.method, headers, body }));
    const to = new URL(url.pathname + url.search, target);
    const res = await fetch(to, { method: req.method, headers, body, redirect: "manual" });
    return new Response(res.body, { status: res.status, headers: res.headers });
  }, { port: 0, portFlag: "--port" });
}
