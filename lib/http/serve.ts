/**
 * Serving an app on a port: a taken port is one line naming the port and the flag that picks
 * another (checkable before anything else is created), the address it really listens on is
 * known, a server open beyond loopback without a key has its warning line, and every
 * connection is held to a header timeout, an idle timeout and a connection cap
 * (guard_conn.ts).
 *
 * @module
 */

import { join } from "node:path";
import { type ConnectionLimits, connectionLimits, startConnectionFront } from "./guard_conn.ts";

/**
 * A port someone else listens on. The message is the whole story (port, address, flag); it is
 * the user's to fix, so `runCli` exits 2 (`category` as the Tinker client's errors carry it).
 */
export class PortInUseError extends Error {
  override name = "PortInUseError";
  readonly category = "user";
  constructor(readonly hostname: string, readonly port: number, readonly flag: string) {
    super(
      `port ${port} on ${hostname} is already in use: stop what listens there or pick another ` +
        `port with ${flag}`,
    );
  }
}

/** Options of {@link serveHttp}. */
export interface ServeOptions {
  /** Interface to bind (default 127.0.0.1). */
  hostname?: string;
  /** Port; 0 picks a free one. */
  port: number;
  /** The CLI flag that sets the port, for the taken-port message (e.g. `--port`). */
  portFlag: string;
  /**
   * What the server owns (a backend, a store, sessions): closed when it cannot listen, and by
   * `close()` once it stops answering, so a caller never closes it twice or not at all.
   */
  owned?: { close(): void | Promise<void> };
  /** Connection limits over the environment's and the defaults (see guard_conn.ts). */
  limits?: Partial<ConnectionLimits>;
}

/** A listening server. */
export interface HttpServer {
  /** Where it listens, e.g. `0.0.0.0:30000` or `[::1]:8080`. */
  address: string;
  /** A base URL a local client can use (loopback for a wildcard address), e.g. `http://127.0.0.1:8080`. */
  url: string;
  port: number;
  hostname: string;
  /** The limits its connections are held to. */
  limits: ConnectionLimits;
  /** Stops listening and waits for answers in flight. */
  close(): Promise<void>;
}

/**
 * Serves `handler` and resolves once it listens.
 *
 * @example
 * const server = await serveHttp(app.fetch, { port: 0, portFlag: "--port" });
 * console.log(`listening on ${server.address}`);
 * await server.close();
 */
export async function serveHttp(
  handler: Deno.ServeHandler<Deno.Addr>,
  o: ServeOptions,
): Promise<HttpServer> {
  const hostname = o.hostname ?? "127.0.0.1";
  let limits: ConnectionLimits;
  let listener: Deno.TcpListener;
  try {
    limits = connectionLimits(o.limits);
    listener = Deno.listen({ hostname, port: o.port });
  } catch (e) {
    await o.owned?.close();
    if (e instanceof Deno.errors.AddrInUse) throw new PortInUseError(hostname, o.port, o.portFlag);
    throw e;
  }
  // The server itself listens on a Unix socket in a directory only this user can enter; the
  // front relays the public port's connections to it under the limits.
  const dir = await Deno.makeTempDir({ prefix: "tb-http-" });
  const socketPath = join(dir, "server.sock");
  const abort = new AbortController();
  const { promise: listening, resolve } = Promise.withResolvers<void>();
  const server = Deno.serve(
    { transport: "unix", path: socketPath, signal: abort.signal, onListen: () => resolve() },
    (req, info) => handler(asHttp(req), info),
  );
  await listening;
  const front = startConnectionFront(listener, socketPath, limits);
  const addr = listener.addr;
  return {
    address: hostPort(addr.hostname, addr.port),
    url: `http://${hostPort(clientHost(addr.hostname), addr.port)}`,
    port: addr.port,
    hostname: addr.hostname,
    limits,
    async close() {
      // Gracefully: no new connections, the server answers what it has begun (a stream to its
      // end), then whatever is left open is closed.
      // (Deno's shutdown() drains; aborting its signal would cut a stream mid-body.)
      front.stopAccepting();
      await server.shutdown();
      await front.drained(1_000);
      front.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      await o.owned?.close();
    },
  };
}

/**
 * Throws {@link PortInUseError} when `port` is taken, so a command can refuse before it creates
 * anything (a run directory, a backend). Port 0 is always free.
 */
export function ensurePortFree(hostname: string, port: number, portFlag: string): void {
  if (port === 0) return;
  try {
    Deno.listen({ hostname, port }).close();
  } catch (e) {
    if (e instanceof Deno.errors.AddrInUse) throw new PortInUseError(hostname, port, portFlag);
    throw e;
  }
}

/** Whether an interface is loopback only (nobody else can reach it). */
export function isLoopback(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/**
 * The warning line for a server reachable beyond this machine without a key, or null when it
 * is keyed or loopback only. `fixes` names the flags that close it.
 *
 * @example
 * const w = openDoorWarning("0.0.0.0", 30000, false, "--api-key KEY, or --proxy-host 127.0.0.1");
 * if (w) console.warn(w);
 */
export function openDoorWarning(
  hostname: string,
  port: number,
  keyed: boolean,
  fixes: string,
): string | null {
  if (keyed || isLoopback(hostname)) return null;
  return `warning: listening on ${hostPort(hostname, port)} without a key: anyone who can ` +
    `reach it may use it; close it with ${fixes}`;
}

/**
 * The request as the client sent it: over the Unix socket Deno names its URL `http+unix://`
 * (with the client's Host), which routes and absolute URLs built from it must not see. A new
 * request from parts: copying `req` whole would read its signal, which Deno aborts (and warns
 * about) once the answer is sent.
 */
function asHttp(req: Request): Request {
  if (!req.url.startsWith("http+unix:")) return req;
  return new Request(`http:${req.url.slice("http+unix:".length)}`, {
    method: req.method,
    headers: req.headers,
    body: req.body,
    // @ts-ignore: Deno needs `duplex` for a streamed body; the DOM types lack it.
    duplex: "half",
  });
}

function clientHost(hostname: string): string {
  if (hostname === "0.0.0.0") return "127.0.0.1";
  if (hostname === "::") return "::1";
  return hostname;
}

function hostPort(hostname: string, port: number): string {
  return `${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`;
}
