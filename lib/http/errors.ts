/**
 * Errors an HTTP server answers with a status, and the one handler that turns any thrown value
 * into a JSON answer: the server's own error shape for what it refuses (4xx), a 400 for a zod
 * failure or malformed JSON, a 413 for an oversized body, and a 500 only for its own bugs.
 *
 * @module
 */

import type { Context, Hono } from "hono";
import { z } from "zod";
import { formatZodError } from "../util/zod.ts";

/**
 * A request a server refuses or cannot serve, with the HTTP status it answers. Servers derive
 * their own errors from it (the local backend's `UserInputError`, the proxy's `ProxyError`…) so
 * that one handler maps them all.
 *
 * @example
 * throw new HttpError(404, `no run ${id}`);
 */
export class HttpError extends Error {
  override name = "HttpError";
  constructor(
    readonly status: number,
    message: string,
    /** Headers of the answer (e.g. `retry-after`). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** A zod failure of a request's body as a 400 whose message names the first bad field. */
export function badRequest(error: z.ZodError, where?: string): HttpError {
  return new HttpError(400, formatZodError(error, where));
}

/** How a server shapes its error answers. */
export interface JsonErrorOptions {
  /** The JSON body of an error answer (`{"detail": …}`, `{"error": …}`, OpenAI's object…). */
  body(e: HttpError): unknown;
  /**
   * Maps errors that are not {@link HttpError}s but are still the client's doing (a server's
   * own classes) to one; undefined leaves them to `internal`.
   */
  classify?(err: Error): HttpError | undefined;
  /** Records an unexpected error and says what the 500 answer's message is. */
  internal(err: Error, c: Context): string;
}

/**
 * Installs `o` as `app`'s error and not-found handlers: every answer is JSON, a client's mistake
 * is a 4xx and never a 500.
 *
 * @example
 * jsonErrors(app, { body: (e) => ({ detail: e.message }), internal: (e) => e.message });
 */
export function jsonErrors(app: Hono, o: JsonErrorOptions): void {
  app.onError((err, c) => {
    const e = toHttpError(err, o) ?? new HttpError(500, o.internal(err, c));
    return c.json(o.body(e) as object, e.status as 400, e.headers);
  });
  app.notFound((c) => {
    const e = new HttpError(404, `no route ${c.req.method} ${new URL(c.req.url).pathname}`);
    return c.json(o.body(e) as object, 404);
  });
}

function toHttpError(err: Error, o: JsonErrorOptions): HttpError | undefined {
  if (err instanceof HttpError) return err;
  const mine = o.classify?.(err);
  if (mine) return mine;
  if (err instanceof z.ZodError) return badRequest(err);
  // Hono's own HTTP errors (body limits, malformed requests) carry a 4xx status.
  const status = (err as { status?: unknown }).status;
  if (typeof status === "number" && status >= 400 && status < 500) {
    return new HttpError(status, err.message || `HTTP ${status}`);
  }
  return undefined;
}
