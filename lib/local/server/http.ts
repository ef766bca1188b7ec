/**
 * What every route of the local backend's HTTP app shares: reading and validating bodies
 * (with the fingerprint that recognises retries), paging parameters, and the answers.
 *
 * @module
 */

import type { Context } from "hono";
import type { z } from "zod";
import { UserInputError } from "../errors.ts";
import { fingerprint } from "../runtime/sequencer.ts";
import { assertFiniteNumbers } from "../backend/wire.ts";
import { parseJsonBytes, readBytes as readLimited } from "../../http/mod.ts";

/** The content type of protobuf bodies (forward_backward in, sample and forward_backward out). */
export const PROTOBUF = "application/x-protobuf";

/**
 * The largest request body (64 MiB; larger is a 413). The biggest honest request is a
 * forward_backward batch as JSON: 128 datums of 2,048 tokens with three float inputs each is
 * about 10 MB, so this leaves room for long contexts while a client cannot make the server
 * buffer hundreds of megabytes per request.
 */
export const MAX_BODY_BYTES = 64 * 2 ** 20;

/** A future handle, as the service answers every queued operation. */
export function handle(c: Context, requestId: string, modelId?: string): Response {
  return c.json(modelId ? { request_id: requestId, model_id: modelId } : { request_id: requestId });
}

/** The raw body; compressed bodies are refused (415) rather than misread. */
export async function readRawBody(c: Context): Promise<Uint8Array> {
  if (c.req.header("content-encoding") && c.req.header("content-encoding") !== "identity") {
    throw new UserInputError(
      `Content-Encoding ${
        c.req.header("content-encoding")
      } is not supported; send the body uncompressed`,
      415,
    );
  }
  return await readLimited(c.req.raw, { maxBytes: MAX_BODY_BYTES });
}

/** Reads and validates a JSON body; the fingerprint identifies retries of the same request. */
export async function readTinkerBody<S extends z.ZodType>(
  c: Context,
  schema: S,
  endpoint: string,
): Promise<{ body: z.infer<S>; print: string }> {
  const bytes = await readRawBody(c);
  const body = parseJsonBytes(bytes, schema, { where: endpoint }) as z.infer<S>;
  assertFiniteNumbers(body, endpoint);
  return { body, print: await fingerprint(bytes) };
}

/** The `limit` and `offset` query parameters of a listing. */
export function paging(c: Context, defaultLimit: number): { limit: number; offset: number } {
  const num = (name: string, dflt: number) => {
    const v = c.req.query(name);
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) {
      throw new UserInputError(`query parameter ${name} must be a non-negative integer, got ${v}`);
    }
    return n;
  };
  return { limit: num("limit", defaultLimit), offset: num("offset", 0) };
}
