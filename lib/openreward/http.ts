/**
 * The ORS client's transport: JSON requests and server-sent-event requests with the headers the
 * protocol uses (`X-API-Key`, `X-Session-ID`, `X-Deployment` on the hosted gateway), retries
 * with exponential backoff on network errors and 5xx, backing off on 429 before failing with a
 * capacity error, and `call` streams that reattach with their `task_id` when the connection
 * drops (as the reference client's `resumable_sse`).
 *
 * @module
 */

import { OrsCapacityError, OrsError, OrsNotFoundError, OrsSessionLostError } from "./errors.ts";
import { readSse } from "../util/sse.ts";

/** Retry settings of the transport. */
export interface RetryPolicy {
  /** Attempts of a JSON request on network errors and 5xx (default 3). */
  attempts: number;
  /** Attempts while the server answers 429, before {@link OrsCapacityError} (default 5). */
  capacityAttempts: number;
  /** Reconnections of one `call` stream (default 5, the reference client's). */
  streamRetries: number;
  /** First backoff delay; it doubles per attempt (default 500 ms). */
  baseDelayMs: number;
  /** Backoff cap (default 10 s). */
  maxDelayMs: number;
  /** A stream silent this long (no data, no ping) is dropped and reattached (default 30 s). */
  heartbeatMs: number;
}

/** The defaults of {@link RetryPolicy}. */
export const DEFAULT_RETRY: RetryPolicy = {
  attempts: 3,
  capacityAttempts: 5,
  streamRetries: 5,
  baseDelayMs: 500,
  maxDelayMs: 10_000,
  heartbeatMs: 30_000,
};

/** Counters of a transport, for tests and benchmarks. */
export interface TransportStats {
  requests: number;
  retries: number;
  capacityWaits: number;
  reattaches: number;
  pings: number;
}

/** What a request is about, for error messages: the environment's name. */
interface Target {
  env: string;
  sid?: string;
  headers?: Record<string, string>;
}

/** An HTTP transport to one ORS server. */
export class OrsTransport {
  readonly stats: TransportStats = {
    requests: 0,
    retries: 0,
    capacityWaits: 0,
    reattaches: 0,
    pings: 0,
  };

  constructor(
    readonly baseUrl: string,
    readonly headers: Record<string, string>,
    readonly retry: RetryPolicy,
  ) {}

  /** A JSON request; HTTP errors become {@link OrsError}s. */
  async json<T = unknown>(
    method: "GET" | "POST",
    path: string,
    target: Target,
    body?: unknown,
  ): Promise<T> {
    const res = await this.#send(method, path, target, body);
    const text = await res.text();
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new OrsError(`${target.env}: ${path} answered with non-JSON ${clip(text)}`);
    }
  }

  /**
   * A POST answered with server-sent events, until `end` (its data, with every `chunk` before
   * it) or `error`. A dropped connection, a silent stream, a 5xx or a 429 reconnects with the
   * body plus the `task_id` seen, so the server reattaches to the running task.
   */
  async sse(
    path: string,
    target: Target,
    body: Record<string, unknown>,
    onTaskId?: (id: string) => void,
  ): Promise<string> {
    let taskId: string | undefined;
    let failures = 0;
    while (true) {
      const payload = taskId ? { ...body, task_id: taskId } : body;
      let dropped: string;
      try {
        const watchdog = new AbortController();
        const res = await this.#send("POST", path, target, payload, {
          signal: watchdog.signal,
          accept: "text/event-stream",
        });
        failures = 0;
        const chunks: string[] = [];
        let timer = setTimeout(() => watchdog.abort(), this.retry.heartbeatMs);
        try {
          for await (const m of readSse(res.body!)) {
            clearTimeout(timer);
            timer = setTimeout(() => watchdog.abort(), this.retry.heartbeatMs);
            if (m.type === "comment") {
              this.stats.pings++;
              continue;
            }
            if (m.event === "task_id") {
              taskId = m.data.trim();
              onTaskId?.(taskId);
            } else if (m.event === "chunk") chunks.push(m.data);
            else if (m.event === "end") return chunks.join("") + m.data;
            else if (m.event === "error") {
              throw new OrsError(`${target.env}: ${path} failed: ${m.data || "unknown error"}`);
            }
          }
        } finally {
          clearTimeout(timer);
        }
        dropped = "the stream ended before its end event";
      } catch (e) {
        if (e instanceof OrsError) throw e;
        dropped = (e as Error).message;
      }
      if (++failures > this.retry.streamRetries) {
        throw new OrsError(
          `${target.env}: ${path} lost its connection ${failures} times (last: ${dropped})`,
        );
      }
      this.stats.reattaches++;
      await sleep(this.#delay(failures));
    }
  }

  /** Sends with retries; answers only with a 2xx response. */
  async #send(
    method: string,
    path: string,
    target: Target,
    body: unknown,
    opts: { signal?: AbortSignal; accept?: string } = {},
  ): Promise<Response> {
    let attempt = 0, waits = 0;
    const started = performance.now();
    while (true) {
      this.stats.requests++;
      let res: Response;
      try {
        res = await fetch(this.baseUrl + path, {
          method,
          redirect: "manual",
          signal: opts.signal,
          headers: {
            ...this.headers,
            ...target.headers,
            ...(target.sid ? { "X-Session-ID": target.sid } : {}),
            ...(body === undefined ? {} : { "Content-Type": "application/json" }),
            Accept: opts.accept ?? "application/json",
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (e) {
        if (opts.signal?.aborted || ++attempt >= this.retry.attempts) {
          throw new OrsError(
            `${target.env}: cannot reach ${this.baseUrl}${path}: ${(e as Error).message}` +
              startHint(this.baseUrl),
          );
        }
        this.stats.retries++;
        await sleep(this.#delay(attempt));
        continue;
      }
      if (res.ok) return res;
      const detail = await errorDetail(res);
      if (res.status === 429) {
        if (++waits >= this.retry.capacityAttempts) {
          const s = ((performance.now() - started) / 1000).toFixed(1);
          throw new OrsCapacityError(
            `${target.env} is at maximum capacity: HTTP 429 on ${path} ${waits} times over ` +
              `${s} s (${detail}); lower max_rollout_concurrency or retry later`,
            429,
          );
        }
        this.stats.capacityWaits++;
        await sleep(this.#delay(waits));
        continue;
      }
      if (res.status >= 500 && ++attempt < this.retry.attempts) {
        this.stats.retries++;
        await sleep(this.#delay(attempt));
        continue;
      }
      throw httpError(res.status, detail, path, target, this.baseUrl);
    }
  }

  #delay(attempt: number): number {
    return Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attempt - 1));
  }
}

function httpError(
  status: number,
  detail: string,
  path: string,
  target: Target,
  baseUrl: string,
): OrsError {
  if (status >= 300 && status < 400) {
    // The reference server redirects paths of unknown environments to its default one.
    return new OrsNotFoundError(
      `environment ${JSON.stringify(target.env)} is not served at ${baseUrl} (see its ` +
        "/list_environments)",
      404,
    );
  }
  if (status === 404 && /deployment not found/i.test(detail)) {
    return new OrsNotFoundError(
      `environment ${JSON.stringify(target.env)} not found (${detail}); names are ` +
        "case-sensitive Org/Env",
      404,
    );
  }
  if (status === 404 && /unknown environment/i.test(detail)) {
    return new OrsNotFoundError(`environment ${JSON.stringify(target.env)}: ${detail}`, 404);
  }
  if (status === 410 || (status === 404 && /active environment not found/i.test(detail))) {
    return new OrsSessionLostError(
      `${target.env}: session ${target.sid ?? "?"} was lost (HTTP ${status}: ${detail})`,
      status,
    );
  }
  return new OrsError(`${target.env}: ${path}: HTTP ${status}: ${detail}`, status);
}

async function errorDetail(res: Response): Promise<string> {
  const text = await res.text().catch(() => "");
  try {
    const d = JSON.parse(text).detail;
    return typeof d === "string" ? d : JSON.stringify(d);
  } catch {
    return clip(text) || res.statusText;
  }
}

function clip(s: string): string {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length > 200 ? one.slice(0, 200) + "…" : one;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * What to do when a server on this machine does not answer: most often it was never started
 * (the multi config's header starts this project's first).
 */
function startHint(baseUrl: string): string {
  const url = URL.parse(baseUrl);
  if (!url || !["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)) return "";
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  return " (nothing answers there: start its server, e.g. this project's with " +
    `deno task envs serve --port ${port})`;
}
