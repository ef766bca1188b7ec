/**
 * Submitting a queued operation and awaiting its result, with the retries of the official
 * SDK: submissions are resent on transient failures, and a result the server forgot (410) is
 * resubmitted. Shared by the training and sampling clients.
 *
 * @module
 */

import { UntypedFutureSchema } from "../protocol/mod.ts";
import { pollFuture, type ResultDecoder } from "./futures.ts";
import {
  parseReply,
  type RawReply,
  TinkerAPIError,
  TinkerConnectionError,
  type TinkerHttp,
} from "./http.ts";

/** What submitting needs: the HTTP transport and the back-off base of retries and polls (ms). */
export interface RetryContext {
  http: TinkerHttp;
  backoffBaseMs: number;
}

/** A submission's body: JSON, or protobuf bytes (forward_backward). */
export type Submission = { json: unknown } | { proto: Uint8Array };

/**
 * POSTs a submission until the server accepts it: 408, 409-free 429, 5xx and broken
 * connections are retried with back-off; the same body means the same seq id, so a retry of a
 * request that did arrive gets the original request id back.
 */
export async function submitWithRetries(
  ctx: RetryContext,
  path: string,
  payload: Submission,
  { maxAttempts = 12 }: { maxAttempts?: number } = {},
): Promise<string> {
  let last: unknown;
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    let reply: RawReply;
    try {
      reply = await ctx.http.raw("POST", path, payload);
    } catch (e) {
      if (!(e instanceof TinkerConnectionError)) throw e;
      last = e;
      await backoff(ctx.backoffBaseMs, attempt);
      continue;
    }
    if (reply.status === 408 || reply.status === 429 || reply.status >= 500) {
      last = new TinkerAPIError(path, reply.status, "retrying");
      await backoff(ctx.backoffBaseMs, attempt);
      continue;
    }
    return parseReply(path, reply, UntypedFutureSchema).request_id;
  }
  throw last;
}

/**
 * Polls a submitted request to its result. A 410 means the server dropped the promise: the
 * request is resubmitted as is (same seq id, so the server runs it at most once) and polled
 * again, as the official SDK does.
 */
export async function awaitResult<T>(
  ctx: RetryContext,
  path: string,
  payload: Submission,
  requestId: string,
  decoder: ResultDecoder<T>,
): Promise<T> {
  for (let attempt = 0;; attempt++) {
    try {
      return await pollFuture(ctx.http, requestId, decoder, { backoffBaseMs: ctx.backoffBaseMs });
    } catch (e) {
      if (!(e instanceof TinkerAPIError && e.status === 410) || attempt >= 5) throw e;
      requestId = await submitWithRetries(ctx, path, payload);
    }
  }
}

function backoff(baseMs: number, attempt: number): Promise<void> {
  const ms = Math.min(baseMs * 2 ** attempt, 30_000) * (0.75 + Math.random() * 0.25);
  return new Promise((r) => setTimeout(r, ms));
}
