/**
 * The HTTP layer of the Tinker client: base URL, credentials, JSON and protobuf bodies, and
 * errors that name the endpoint and say what the server answered.
 *
 * @module
 */

import type { z } from "zod";
import { formatZodError } from "../protocol/mod.ts";

/** The hosted Tinker service. */
export const TINKER_CLOUD_URL = "https://tinker.thinkingmachines.dev/services/tinker-prod";

/** A non-2xx answer from the server. */
export class TinkerAPIError extends Error {
  override name = "TinkerAPIError";
  constructor(readonly endpoint: string, readonly status: number, readonly detail: string) {
    super(`${endpoint}: HTTP ${status}: ${detail}`);
  }
}

/** The connection broke or timed out before an answer arrived. */
export class TinkerConnectionError extends Error {
  override name = "TinkerConnectionError";
  constructor(readonly endpoint: string, cause: unknown) {
    super(`${endpoint}: connection failed: ${(cause as Error)?.message ?? String(cause)}`, {
      cause,
    });
  }
}

/** A response that does not match the protocol's schema. */
export class TinkerResponseError extends Error {
  override name = "TinkerResponseError";
}

/** Options of {@link TinkerHttp}. */
export interface TinkerHttpOptions {
  /** Base URL, e.g. `http://127.0.0.1:8000`; paths go under `/api/v1/`. */
  baseUrl: string;
  /** Sent as `X-API-Key` (the local backend accepts any key). */
  apiKey: string;
  /** Request timeout in milliseconds. */
  timeoutMs?: number;
  /** Injectable fetch (tests, proxies). */
  fetch?: typeof fetch;
}

/** A decoded answer: status, content type and the raw body. */
export interface RawReply {
  status: number;
  contentType: string;
  body: Uint8Array;
}

/** Low-level requests to one Tinker-compatible server. */
export class TinkerHttp {
  readonly baseUrl: string;
  readonly #apiKey: string;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(opts: TinkerHttpOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.#apiKey = opts.apiKey;
    this.#timeoutMs = opts.timeoutMs ?? 60_000;
    this.#fetch = opts.fetch ?? fetch;
  }

  /** Sends a request and returns the raw reply of any status; network failures throw. */
  async raw(
    method: string,
    path: string,
    body?: { json: unknown } | { proto: Uint8Array },
    { accept = "application/json", timeoutMs = this.#timeoutMs } = {},
  ): Promise<RawReply> {
    const headers: Record<string, string> = { "X-API-Key": this.#apiKey, accept };
    let payload: BodyInit | undefined;
    if (body && "json" in body) {
      headers["content-type"] = "application/json";
      payload = JSON.stringify(body.json);
    } else if (body) {
      headers["content-type"] = "application/x-protobuf";
      payload = body.proto as Uint8Array<ArrayBuffer>;
    }
    try {
      const res = await this.#fetch(`${this.baseUrl}/api/v1/${path}`, {
        method,
        headers,
        body: payload,
        signal: AbortSignal.timeout(timeoutMs),
      });
      return {
        status: res.status,
        contentType: res.headers.get("content-type") ?? "",
        body: new Uint8Array(await res.arrayBuffer()),
      };
    } catch (e) {
      throw new TinkerConnectionError(path, e);
    }
  }

  /** Sends JSON (or nothing) and validates a 2xx JSON answer with `schema`. */
  async json<S extends z.ZodType>(
    method: "GET" | "POST" | "PUT" | "DELETE",
    path: string,
    schema: S,
    body?: unknown,
  ): Promise<z.infer<S>> {
    const reply = await this.raw(method, path, body === undefined ? undefined : { json: body });
    return parseReply(path, reply, schema);
  }
}

/** Throws for a non-2xx reply; otherwise parses the JSON body with `schema`. */
export function parseReply<S extends z.ZodType>(
  endpoint: string,
  reply: RawReply,
  schema: S,
): z.infer<S> {
  const text = new TextDecoder().decode(reply.body);
  if (reply.status < 200 || reply.status >= 300) {
    throw new TinkerAPIError(endpoint, reply.status, errorDetail(text));
  }
  let value: unknown;
  try {
    value = text ? JSON.parse(text) : {};
  } catch {
    throw new TinkerResponseError(
      `${endpoint}: the server's answer is not JSON: ${text.slice(0, 200)}`,
    );
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new TinkerResponseError(`malformed response: ${formatZodError(endpoint, parsed.error)}`);
  }
  return parsed.data;
}

function errorDetail(text: string): string {
  try {
    const body = JSON.parse(text);
    if (typeof body?.detail === "string") return body.detail;
    if (typeof body?.error === "string") return body.error;
  } catch {
    // not JSON: use the text itself
  }
  return text.slice(0, 500) || "(empty body)";
}
