/**
 * What an ORS request carries besides its route: the session id (`X-Session-ID`), secrets
 * (`X-Secrets`) and a JSON body checked against its schema.
 *
 * @module
 */

import type { Context } from "hono";
import type { z } from "zod";
import { HttpError, readJson } from "../http/mod.ts";

/** The request's session id (`X-Session-ID`); a 400 without one. */
export function sidOf(c: Context): string {
  const sid = c.req.header("X-Session-ID")?.trim();
  if (!sid) throw new HttpError(400, "X-Session-ID header is required");
  return sid;
}

/** Secrets from `X-Secrets`: base64 JSON of `{name: {value}}` (openreward) or `{name: value}`. */
export function secretsHeader(c: Context): Record<string, string> {
  const raw = c.req.header("X-Secrets");
  if (!raw) return {};
  try {
    const parsed = JSON.parse(new TextDecoder().decode(base64Bytes(raw)));
    return Object.fromEntries(
      Object.entries(parsed as Record<string, unknown>).map(([k, v]) => [
        k,
        typeof v === "object" && v !== null ? String((v as { value?: unknown }).value) : String(v),
      ]),
    );
  } catch {
    throw new HttpError(400, "X-Secrets is not base64-encoded JSON");
  }
}

function base64Bytes(s: string): Uint8Array {
  return Uint8Array.from(atob(s), (ch) => ch.charCodeAt(0));
}

/** The request's JSON body, checked against `schema` (a 400 when it does not fit). */
export function readOrsBody<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S>> {
  return readJson(c.req.raw, schema, { maxBytes: MAX_BODY_BYTES });
}

/** Bodies are tool inputs and task specs: a few MiB at most. */
const MAX_BODY_BYTES = 8 * 2 ** 20;
