/**
 * Reading request bodies with a size limit: an oversized body is a 413 read no further than the
 * limit, malformed JSON a 400, a body that fails its schema a 400 naming the field.
 *
 * @module
 */

import type { z } from "zod";
import { badRequest, HttpError } from "./errors.ts";

/** The largest body a server reads unless it says otherwise (16 MiB). */
export const DEFAULT_MAX_BODY_BYTES = 16 * 2 ** 20;

/** Options of {@link readBytes} and {@link readJson}. */
export interface BodyOptions {
  /** Largest body accepted (default {@link DEFAULT_MAX_BODY_BYTES}). */
  maxBytes?: number;
  /** Prefix of error messages, e.g. the endpoint. */
  where?: string;
}

/** The raw body, refused with a 413 as soon as it passes `maxBytes`. */
export async function readBytes(req: Request, o: BodyOptions = {}): Promise<Uint8Array> {
  const max = o.maxBytes ?? DEFAULT_MAX_BODY_BYTES;
  const tooLarge = () => new HttpError(413, `${prefix(o)}the request body is over ${max} bytes`);
  const declared = Number(req.headers.get("content-length") ?? NaN);
  if (declared > max) throw tooLarge();
  if (!req.body) return new Uint8Array();
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const part of req.body) {
    size += part.length;
    if (size > max) throw tooLarge();
    parts.push(part);
  }
  return concatBytes(parts);
}

/** The parts as one array of bytes (a body read in parts, or one written from several). */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * The body as JSON (an empty body is `{}`: clients POST nothing for "no options"), validated by `schema` when one is given.
 *
 * @example
 * const body = await readJson(c.req.raw, CreateRunSchema, { where: "POST /runs" });
 */
export async function readJson<S extends z.ZodType>(
  req: Request,
  schema: S,
  o?: BodyOptions,
): Promise<z.infer<S>>;
export async function readJson(req: Request, schema?: undefined, o?: BodyOptions): Promise<unknown>;
export async function readJson(
  req: Request,
  schema?: z.ZodType,
  o: BodyOptions = {},
): Promise<unknown> {
  return parseJsonBytes(await readBytes(req, o), schema, o);
}

/** Parses and validates bytes already read (when a server needs the bytes too). */
export function parseJsonBytes(
  bytes: Uint8Array,
  schema?: z.ZodType,
  o: BodyOptions = {},
): unknown {
  const text = new TextDecoder().decode(bytes);
  let raw: unknown = {};
  if (text.trim()) {
    try {
      raw = JSON.parse(text);
    } catch (e) {
      throw new HttpError(
        400,
        `${prefix(o)}the request body is not valid JSON (${(e as Error).message})`,
      );
    }
  }
  if (!schema) return raw;
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw badRequest(parsed.error, o.where);
  return parsed.data;
}

function prefix(o: BodyOptions): string {
  return o.where ? `${o.where}: ` : "";
}
