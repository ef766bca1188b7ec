/**
 * The HTTP layer of the Tinker client: base URL, credentials, JSON and protobuf bodies, and
 * errors that name the endpoint and say what the server answered.
 *
 * @module
 */

import { z } from "zod";
import { formatZodError } from "../util/zod.ts";
import { unrefTimer } from "./runtime.ts";

/** The hosted Tinker service. */
export const TINKER_CLOUD_URL = "https://tinker.thinkingmachines.dev/services/tinker-prod";

/** A non-2xx answer from the server. */
export class TinkerAPIError extends Error {
  /** The error's name, `TinkerAPIError`. */
  override name = "TinkerAPIError";
  /** The endpoint, the HTTP status and the server's message. */
  constructor(readonly endpoint: string, readonly status: number, readonly detail: string) {
    super(`${endpoint}: HTTP ${status}: ${detail}`);
  }
}

/**
 * The server refused the credential (HTTP 401): a wrong or expired API key, or a JWT the
 * server no longer accepts. The message says what to check instead of a stack of retries.
 */
export class TinkerAuthenticationError extends TinkerAPIError {
  /** The error's name, `TinkerAuthenticationError`. */
  override name = "TinkerAuthenticationError";
  /** The endpoint and the server's reason. */
  constructor(endpoint: string, detail: string) {
    super(endpoint, 401, detail);
    this.message = `${endpoint}: authentication failed (HTTP 401): ${detail}. ` +
      `Check the API key (apiKey, TINKER_API_KEY or TINKER_CREDENTIAL_CMD).`;
  }
}

/** The connection broke or timed out before an answer arrived. */
export class TinkerConnectionError extends Error {
  /** The error's name, `TinkerConnectionError`. */
  override name = "TinkerConnectionError";
  /** The endpoint and what broke (kept as the error's `cause`). */
  constructor(readonly endpoint: string, cause: unknown) {
    super(`${endpoint}: connection failed: ${(cause as Error)?.message ?? String(cause)}`, {
      cause,
    });
  }
}

/** A response that does not match the protocol's schema. */
export class TinkerResponseError extends Error {
  /** The error's name, `TinkerResponseError`. */
  override name = "TinkerResponseError";
}

/** Options of {@link TinkerHttp}. */
export interface TinkerHttpOptions {
  /** Base URL, e.g. `http://127.0.0.1:8000`; paths go under `/api/v1/`. */
  baseUrl: string;
  /**
   * Sent as `X-API-Key` (the local backend accepts any key unless started with `auth`). A
   * function is asked on every request, as the SDK runs `TINKER_CREDENTIAL_CMD`.
   */
  apiKey: string | (() => Promise<string>);
  /** Request timeout in milliseconds. */
  timeoutMs?: number;
  /** Injectable fetch (tests, proxies). */
  fetch?: typeof fetch;
}

/** A decoded answer: status, content type and the raw body. */
export interface RawReply {
  /** The HTTP status. */
  status: number;
  /** The `content-type` header (empty when absent). */
  contentType: string;
  /** The body's bytes, as received. */
  body: Uint8Array;
}

/** Low-level requests to one Tinker-compatible server. */
export class TinkerHttp {
  /** The server's URL, without a trailing slash. */
  readonly baseUrl: string;
  readonly #apiKey: string | (() => Promise<string>);
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  #jwt: JwtSession | undefined;

  /** Made by `ServiceClient.connect`; the clients send through it. */
  constructor(opts: TinkerHttpOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, "");
    this.#apiKey = opts.apiKey;
    this.#timeoutMs = opts.timeoutMs ?? 60_000;
    this.#fetch = opts.fetch ?? fetch;
  }

  /**
   * Switches to JWT auth, as a server with `pjwt_auth_enabled` asks: exchanges the API key at
   * `auth/token` for a JWT, sends the JWT as `X-API-Key` from then on, and refreshes it in the
   * background at 80 % of its lifetime (and on demand when it is about to expire or a request
   * gets a 401).
   */
  async useJwtAuth(): Promise<void> {
    const session = new JwtSession(() => this.#exchangeJwt());
    await session.start();
    this.#jwt?.stop();
    this.#jwt = session;
  }

  /** The JWT being sent, when JWT auth is on (tests, diagnostics). */
  get jwt(): string | undefined {
    return this.#jwt?.token;
  }

  /** Stops the background JWT refresh. */
  close(): void {
    this.#jwt?.stop();
  }

  async #exchangeJwt(): Promise<string> {
    const reply = await this.raw("POST", "auth/token", { json: {} }, { credential: "api_key" });
    const { jwt } = parseReply("auth/token", reply, JwtReplySchema);
    return jwt;
  }

  async #apiKeyValue(): Promise<string> {
    return typeof this.#apiKey === "string" ? this.#apiKey : await this.#apiKey();
  }

  /** Sends a request and returns the raw reply of any status; network failures throw. */
  async raw(
    method: string,
    path: string,
    body?: { json: unknown } | { proto: Uint8Array },
    { accept = "application/json", timeoutMs = this.#timeoutMs, credential = "session" }: {
      accept?: string;
      timeoutMs?: number;
      /** `api_key` sends the API key even when JWT auth is on (the token exchange). */
      credential?: "session" | "api_key";
    } = {},
  ): Promise<RawReply> {
    const jwt = credential === "session" ? this.#jwt : undefined;
    const reply = await this.#send(method, path, body, accept, timeoutMs, jwt);
    // A JWT refused mid-run (a refresh came too late, a clock jump): refresh once and resend.
    if (reply.status === 401 && jwt) {
      await jwt.refresh();
      return await this.#send(method, path, body, accept, timeoutMs, jwt);
    }
    return reply;
  }

  async #send(
    method: string,
    path: string,
    body: { json: unknown } | { proto: Uint8Array } | undefined,
    accept: string,
    timeoutMs: number,
    jwt: JwtSession | undefined,
  ): Promise<RawReply> {
    const key = jwt ? await jwt.current() : await this.#apiKeyValue();
    const headers: Record<string, string> = { "X-API-Key": key, accept };
    let payload: BodyInit | undefined;
    if (body && "json" in body) {
      headers["content-type"] = "application/json";
      payload = JSON.stringify(body.json, typedArraysAsLists);
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
  if (reply.status === 401) throw new TinkerAuthenticationError(endpoint, errorDetail(text));
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
    throw new TinkerResponseError(`malformed response: ${formatZodError(parsed.error, endpoint)}`);
  }
  return parsed.data;
}

/** JSON has no typed arrays: tensors holding them go out as lists, not `{"0":…}` objects. */
function typedArraysAsLists(_key: string, value: unknown): unknown {
  return ArrayBuffer.isView(value) && !(value instanceof DataView)
    ? Array.from(value as Float32Array)
    : value;
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

const JwtReplySchema = z.object({ jwt: z.string().min(1) });

/** Seconds since the epoch at which a JWT expires (its payload's `exp`), if it says. */
export function jwtExpiry(jwt: string): number | undefined {
  const part = jwt.split(".")[1];
  if (!part) return undefined;
  try {
    const b64 = part.replace(/-/g, "+").replace(/_/g, "/");
    const payload = JSON.parse(atob(b64 + "=".repeat((4 - b64.length % 4) % 4)));
    return typeof payload?.exp === "number" ? payload.exp : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A JWT and its renewal: a background refresh at 80 % of the token's lifetime (an unref'd
 * timer, so it never keeps a script alive), and a blocking refresh when a request finds less
 * than 10 % of the lifetime (at most 60 s) left. Concurrent refreshes share one exchange.
 */
class JwtSession {
  token = "";
  #exchange: () => Promise<string>;
  #expiresAtMs = Infinity;
  #lifetimeMs = Infinity;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #inFlight: Promise<void> | undefined;
  #stopped = false;

  constructor(exchange: () => Promise<string>) {
    this.#exchange = exchange;
  }

  async start(): Promise<void> {
    await this.refresh();
  }

  /** The token to send now, refreshed first when it is about to expire. */
  async current(): Promise<string> {
    const margin = Math.min(60_000, this.#lifetimeMs * 0.1);
    if (Date.now() >= this.#expiresAtMs - margin) await this.refresh();
    return this.token;
  }

  refresh(): Promise<void> {
    this.#inFlight ??= this.#renew().finally(() => (this.#inFlight = undefined));
    return this.#inFlight;
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
  }

  async #renew(): Promise<void> {
    const jwt = await this.#exchange();
    const exp = jwtExpiry(jwt);
    this.token = jwt;
    const now = Date.now();
    this.#expiresAtMs = exp === undefined ? Infinity : exp * 1000;
    this.#lifetimeMs = Math.max(0, this.#expiresAtMs - now);
    this.#schedule(this.#lifetimeMs * 0.8);
  }

  #schedule(delayMs: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#stopped || !Number.isFinite(delayMs)) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      // A failed background refresh is tried again soon; requests refresh on demand meanwhile.
      this.refresh().catch(() => this.#schedule(Math.min(30_000, this.#lifetimeMs * 0.05)));
    }, delayMs);
    unrefTimer(this.#timer);
  }
}
