/**
 * Checking a shared secret without a timing side channel, and the bearer-key middleware every
 * server that takes a key uses.
 *
 * @module
 */

import { createHash, timingSafeEqual } from "node:crypto";
import type { Context, MiddlewareHandler } from "hono";
import { HttpError } from "./errors.ts";

/**
 * Whether `given` equals `secret`, in time independent of where (and whether) they differ:
 * both are hashed first, so even their lengths do not show.
 */
export function sameSecret(given: string, secret: string): boolean {
  const digest = (s: string) => createHash("sha256").update(s).digest();
  return timingSafeEqual(digest(given), digest(secret));
}

/** Options of {@link keyAuth}. */
export interface KeyAuthOptions {
  /** The key clients must send. */
  key: string;
  /**
   * Where clients send it: `bearer` (`Authorization: Bearer <key>`, the default: OpenAI
   * clients, the run API) or `x-api-key` (the `X-API-Key` header, as ORS clients send it).
   */
  header?: "bearer" | "x-api-key";
  /** Paths open without a key (e.g. a health check). */
  open?: (path: string) => boolean;
  /** The server's own 401 error (OpenAI's carries `code: "invalid_api_key"`). */
  error?: (message: string) => HttpError;
}

/**
 * Middleware answering 401 unless the request carries the key.
 *
 * @example
 * app.use("*", keyAuth({ key, open: (p) => p === "/health" }));
 */
export function keyAuth(o: KeyAuthOptions): MiddlewareHandler {
  const fail = o.error ?? ((m: string) => new HttpError(401, m));
  const bearer = (o.header ?? "bearer") === "bearer";
  const how = bearer ? "Authorization: Bearer <key>" : "X-API-Key: <key>";
  return async (c: Context, next) => {
    if (o.open?.(c.req.path)) return await next();
    const raw = c.req.header(bearer ? "authorization" : "x-api-key") ?? "";
    // The scheme is case-insensitive (RFC 9110 §11.1): `bearer KEY` is as good as `Bearer KEY`.
    const given = bearer ? (/^bearer +(\S+)\s*$/i.exec(raw)?.[1] ?? "") : raw;
    if (!given) throw fail(`missing API key: send ${how}`);
    if (!sameSecret(given, o.key)) throw fail("invalid API key");
    await next();
  };
}
