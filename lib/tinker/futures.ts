/**
 * Futures of the Tinker client: every queued operation returns a `request_id` at once; its
 * result is polled with `retrieve_future`, following the official SDK's status-code rules
 * (try_again and 408/5xx: poll again; 429 and broken connections: back off; a
 * `{"error","category"}` body: the request failed).
 *
 * @module
 */

import type { z } from "zod";
import {
  decodeForwardBackwardOutput,
  decodeSampleResponse,
  ForwardBackwardOutputSchema,
  type RequestFailedResponseSchema,
  SampleResponseSchema,
} from "../protocol/mod.ts";
import { parseReply, TinkerAPIError, TinkerConnectionError, type TinkerHttp } from "./http.ts";

/** The server ran the request and it failed; `category` says whose fault it was. */
export class RequestFailedError extends Error {
  /** The error's name, `RequestFailedError`. */
  override name = "RequestFailedError";
  /** `category`: the server's word on whose fault it was. */
  constructor(readonly category: "user" | "server" | "unknown", message: string) {
    super(message);
  }
}

/** How a future's result is decoded: JSON with a schema, or a protobuf kind. */
export type ResultDecoder<T> =
  | { json: z.ZodType<T> }
  | { proto: "forward_backward" | "sample" };

/** Tuning of polling; tests shrink the back-off. */
export interface PollOptions {
  /** First back-off after a 429 or a broken connection; doubles up to 30 s. */
  backoffBaseMs?: number;
  /** Give up after this long without an answer. */
  timeoutMs?: number;
}

const PROTOBUF = "application/x-protobuf";

/**
 * A result that will arrive later. `await future` (or `future.result()`) polls until done.
 *
 * @example
 * const fb = training.forwardBackward(data, "cross_entropy"); // submitted now
 * const step = training.optimStep({ learning_rate: 1e-4 });   // queued behind it
 * const { metrics } = await fb;
 * await step;
 */
export class APIFuture<T> implements PromiseLike<T> {
  readonly #result: Promise<T>;

  /** Wraps the promise of a request's result (the clients make futures; users await them). */
  constructor(result: Promise<T>) {
    this.#result = result;
    // Unawaited futures must not crash the process with an unhandled rejection.
    this.#result.catch(() => {});
  }

  /** Waits for the result. */
  result(): Promise<T> {
    return this.#result;
  }

  /** Makes the future awaitable: `await future` is `await future.result()`. */
  then<A = T, B = never>(
    onfulfilled?: ((value: T) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.#result.then(onfulfilled, onrejected);
  }
}

/** Polls `retrieve_future` for `requestId` until it is done, then decodes the result. */
export async function pollFuture<T>(
  http: TinkerHttp,
  requestId: string,
  decoder: ResultDecoder<T>,
  { backoffBaseMs = 1_000, timeoutMs = 3 * 3600_000 }: PollOptions = {},
): Promise<T> {
  const accept = "proto" in decoder ? `${PROTOBUF}, application/json` : "application/json";
  const deadline = Date.now() + timeoutMs;
  let failures = 0, badRequests = 0;
  while (Date.now() < deadline) {
    let reply;
    try {
      reply = await http.raw("POST", "retrieve_future", {
        json: { request_id: requestId, allow_metadata_only: false },
      }, { accept, timeoutMs: 45_000 });
    } catch (e) {
      if (!(e instanceof TinkerConnectionError)) throw e;
      await sleep(Math.min(backoffBaseMs * 2 ** failures++, 30_000));
      continue;
    }
    const { status } = reply;
    if (status === 429) {
      await sleep(Math.min(backoffBaseMs * 2 ** failures++, 30_000));
      continue;
    }
    failures = 0;
    if (status === 408 || status >= 500) continue;
    if (status === 400 && ++badRequests <= 3) continue;
    if (status !== 200) {
      parseReply("retrieve_future", reply, SampleResponseSchema); // throws TinkerAPIError
      throw new TinkerAPIError("retrieve_future", status, "unexpected status");
    }
    if (reply.contentType.includes(PROTOBUF)) {
      if (!("proto" in decoder)) throw new Error("retrieve_future: unexpected protobuf result");
      return (decoder.proto === "sample"
        ? decodeSampleResponse(reply.body)
        : decodeForwardBackwardOutput(reply.body)) as T;
    }
    const body = JSON.parse(new TextDecoder().decode(reply.body));
    if (body?.type === "try_again") {
      // The server long-polls; a short pause guards against one that does not.
      await sleep(20);
      continue;
    }
    if (body && typeof body === "object" && "error" in body) {
      const { error, category } = body as z.infer<typeof RequestFailedResponseSchema>;
      const cat = category === "user" || category === "server" ? category : "unknown";
      throw new RequestFailedError(cat, error);
    }
    const schema = "json" in decoder
      ? decoder.json
      : decoder.proto === "sample"
      ? SampleResponseSchema
      : ForwardBackwardOutputSchema;
    return parseReply("retrieve_future", reply, schema) as T;
  }
  throw new TinkerConnectionError(
    "retrieve_future",
    new Error(`no result for ${requestId} in time`),
  );
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
