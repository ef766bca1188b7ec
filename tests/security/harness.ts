/**
 * Attacks run against real server processes on loopback: each server is started the way a
 * user starts it (`deno run -A scripts/<x>.ts`), on a free port, and found through its ready
 * file.
 *
 * @module
 */

import { type ServerProcess, startServerProcess } from "../../lib/http/mod.ts";

/** A script of the project, by name (e.g. `serve`). */
export function script(name: string): string {
  return new URL(`../../scripts/${name}.ts`, import.meta.url).pathname;
}

/** Starts `scripts/<name>.ts args…`, runs `fn`, and always stops it and removes `dirs`. */
export async function withProcess(
  name: string,
  args: string[],
  fn: (p: ServerProcess) => Promise<void>,
  o: { env?: Record<string, string>; dirs?: string[] } = {},
): Promise<void> {
  const p = await startServerProcess({ script: script(name), args, env: o.env });
  try {
    await fn(p);
  } finally {
    await p.stop();
    for (const d of o.dirs ?? []) await Deno.remove(d, { recursive: true }).catch(() => {});
  }
}

/** Status and parsed JSON body (or text) of an answer. */
export interface Reply {
  status: number;
  // deno-lint-ignore no-explicit-any
  body: any;
  headers: Headers;
}

/** Sends a request and reads the whole answer. */
export async function send(url: string, init: RequestInit = {}): Promise<Reply> {
  const res = await fetch(url, init);
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch { /* not JSON: keep the text */ }
  return { status: res.status, body, headers: res.headers };
}

/** POSTs `body` (a string is sent as is) as JSON unless `headers` say otherwise. */
export function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  return send(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/**
 * Opens raw TCP connections to `url`'s port; `first` is written on each (e.g. a request line
 * without the blank line that ends the headers).
 */
export async function openConnections(
  url: string,
  n: number,
  first = "",
): Promise<Deno.TcpConn[]> {
  const { hostname, port } = new URL(url);
  const conns: Deno.TcpConn[] = [];
  for (let i = 0; i < n; i++) {
    const c = await Deno.connect({ hostname, port: Number(port) });
    if (first) await c.write(new TextEncoder().encode(first));
    conns.push(c);
  }
  return conns;
}

/**
 * What a connection receives until the server closes it, or null if it is still open after
 * `ms` (the connection is then closed here).
 */
export async function readUntilClosed(c: Deno.Conn, ms: number): Promise<string | null> {
  const buf = new Uint8Array(4096);
  let text = "";
  const timer = setTimeout(() => c.close(), ms);
  let timedOut = false;
  try {
    for (;;) {
      const n = await c.read(buf);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
  } catch (e) {
    // Closed here when the time ran out (BadResource), or reset by the server.
    if (e instanceof Deno.errors.BadResource) timedOut = true;
  } finally {
    clearTimeout(timer);
  }
  if (timedOut) return null;
  try {
    c.close();
  } catch { /* already closed */ }
  return text;
}
