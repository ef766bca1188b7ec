/**
 * Keeping web pages out of a local API: a page on any site can make the browser send requests
 * to 127.0.0.1 (a "simple" cross-site POST with a text/plain body needs no preflight), and a
 * DNS-rebinding page can even read the answers. {@link browserGuard} refuses both: a request
 * carrying a foreign `Origin` (403), a `Host` that is not this machine's loopback name while
 * the server listens on loopback only (403), and a body that is not declared
 * `application/json` (415), which no simple cross-site request can declare.
 *
 * @module
 */

import type { Context, MiddlewareHandler } from "hono";
import { HttpError } from "./errors.ts";
import { isLoopback } from "./serve.ts";

/** Options of {@link browserGuard}. */
export interface BrowserGuardOptions {
  /** The interface the server binds: on loopback, `Host` must name loopback too. */
  hostname: string;
  /** More `Host` names to accept (without port), e.g. a name in /etc/hosts. */
  allowedHosts?: readonly string[];
  /** More `Origin`s to accept, e.g. `http://localhost:3000` for a page of one's own. */
  allowedOrigins?: readonly string[];
}

/**
 * Middleware refusing cross-site and rebinding requests (see the module's doc).
 *
 * @example
 * app.use("*", browserGuard({ hostname: "127.0.0.1" }));
 */
export function browserGuard(o: BrowserGuardOptions): MiddlewareHandler {
  const loopbackOnly = isLoopback(o.hostname);
  const extraHosts = new Set((o.allowedHosts ?? []).map((h) => h.toLowerCase()));
  const origins = new Set((o.allowedOrigins ?? []).map((s) => s.toLowerCase()));
  return async (c: Context, next) => {
    const host = (c.req.header("host") ?? "").toLowerCase();
    const name = host.replace(/:\d+$/, "");
    if (loopbackOnly && !isLoopback(name) && !extraHosts.has(name)) {
      throw new HttpError(
        403,
        `Host ${JSON.stringify(host)} is not this server's: it listens on loopback only, so ` +
          `requests must name localhost or 127.0.0.1 (a DNS-rebinding page names its own)`,
      );
    }
    const origin = c.req.header("origin");
    if (origin !== undefined && !sameHost(origin, host) && !origins.has(origin.toLowerCase())) {
      throw new HttpError(
        403,
        `cross-site request from Origin ${origin} refused: this API is not for web pages`,
      );
    }
    if (hasBody(c.req.raw) && !isJson(c.req.header("content-type"))) {
      throw new HttpError(
        415,
        `request bodies must be sent as Content-Type: application/json (got ${
          JSON.stringify(c.req.header("content-type") ?? "none")
        })`,
      );
    }
    await next();
  };
}

function sameHost(origin: string, host: string): boolean {
  try {
    return new URL(origin).host.toLowerCase() === host;
  } catch {
    return false;
  }
}

function hasBody(req: Request): boolean {
  const length = req.headers.get("content-length");
  if (length !== null) return Number(length) > 0;
  return req.headers.has("transfer-encoding");
}

function isJson(type: string | undefined): boolean {
  return /^application\/json\s*(;|$)/i.test(type ?? "");
}
