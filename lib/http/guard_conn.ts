/**
 * What Deno.serve does not offer (as of Deno 2.9: no header or idle timeout, no connection
 * cap; 300 connections sending headers slowly were held for minutes): a TCP front that
 * accepts connections on the public port and relays each one to the server, which listens on
 * a private Unix socket. The front enforces, per connection:
 *
 * - a **connection cap**: one past it is answered `429` and closed;
 * - a **header timeout**: a request's headers must be complete (`\r\n\r\n`) within it, counted
 *   from its first byte (from the connection's start for the first request), else `408` and
 *   closed, so a slow-headers client cannot hold a connection, nor wait out the key check;
 * - an **idle timeout**: a connection with no bytes either way for that long is closed, except
 *   while a request waits for its answer (a long poll, a sampler busy with a training step).
 *
 * Limits come from {@link ConnectionLimitsSchema}: defaults, overridden by the environment
 * (`TINKERBENCH_HTTP_*`) for every server of a process, or by the caller of `serveHttp`.
 *
 * @module
 */

import { z } from "zod";
import { formatZodError } from "../util/zod.ts";
import { concatBytes } from "./body.ts";

/** The limits every server enforces; each one is a setting with its range, written once. */
export const ConnectionLimitsSchema = z.object({
  /** Connections at once; one more is answered 429 and closed. */
  maxConnections: z.number().int().min(1).max(1_000_000).default(512),
  /** A request's headers must arrive within this (ms); else 408 and closed. */
  headerTimeoutMs: z.number().int().min(100).max(600_000).default(10_000),
  /** A connection silent both ways this long (ms) is closed, unless a request awaits its answer. */
  idleTimeoutMs: z.number().int().min(100).max(3_600_000).default(30_000),
});

/** The connection limits of {@link ConnectionLimitsSchema}. */
export type ConnectionLimits = z.output<typeof ConnectionLimitsSchema>;

const ENV_NAMES: Record<keyof ConnectionLimits, string> = {
  maxConnections: "TINKERBENCH_HTTP_MAX_CONNECTIONS",
  headerTimeoutMs: "TINKERBENCH_HTTP_HEADER_TIMEOUT_MS",
  idleTimeoutMs: "TINKERBENCH_HTTP_IDLE_TIMEOUT_MS",
};

/**
 * The limits: `given` over the environment's `TINKERBENCH_HTTP_*` over the defaults. A bad
 * environment value is an error naming the variable.
 */
export function connectionLimits(given: Partial<ConnectionLimits> = {}): ConnectionLimits {
  const fromEnv: Record<string, number> = {};
  for (const [key, name] of Object.entries(ENV_NAMES)) {
    const raw = Deno.env.get(name);
    if (raw !== undefined && raw !== "") fromEnv[key] = Number(raw);
  }
  const parsed = ConnectionLimitsSchema.safeParse({ ...fromEnv, ...given });
  if (!parsed.success) {
    throw new Error(
      `HTTP limits (${Object.values(ENV_NAMES).join(", ")}): ${formatZodError(parsed.error)}`,
    );
  }
  return parsed.data;
}

/** The front of one server: stop it with {@link ConnectionFront.close}. */
export interface ConnectionFront {
  /** Connections open now. */
  readonly open: number;
  /** Stops accepting; the connections open go on (the server behind ends them as it drains). */
  stopAccepting(): void;
  /**
   * Resolves once every connection has ended, or after `ms`: the relays forward what the
   * server wrote before it closed its side.
   */
  drained(ms: number): Promise<void>;
  /** Stops accepting, closes every connection. */
  close(): void;
}

interface ConnState {
  client: Deno.Conn;
  inner?: Deno.Conn;
  /** Where the client's request stream is (see {@link RequestTracker}). */
  requests: RequestTracker;
  lastActivity: number;
  closed: boolean;
}

const encoder = new TextEncoder();

function refusal(status: string, message: string, extra = ""): Uint8Array {
  const body = JSON.stringify({ error: message });
  return encoder.encode(
    `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${
      encoder.encode(body).length
    }\r\nconnection: close\r\n${extra}\r\n${body}`,
  );
}

/**
 * Accepts on `listener` and relays each connection to the Unix socket `socketPath` under
 * `limits` (see the module's doc).
 */
export function startConnectionFront(
  listener: Deno.Listener,
  socketPath: string,
  limits: ConnectionLimits,
): ConnectionFront {
  const conns = new Set<ConnState>();
  const end = (s: ConnState) => {
    if (s.closed) return;
    s.closed = true;
    conns.delete(s);
    for (const c of [s.client, s.inner]) {
      try {
        c?.close();
      } catch { /* already closed */ }
    }
  };
  const tick = Math.max(50, Math.min(limits.headerTimeoutMs, limits.idleTimeoutMs) / 10);
  const timer = setInterval(() => {
    const now = performance.now();
    for (const s of conns) {
      const since = s.requests.headersSince;
      if (since !== undefined && now - since > limits.headerTimeoutMs) {
        const msg = `request headers not complete within ${limits.headerTimeoutMs} ms`;
        s.requests.headersSince = undefined;
        s.client.write(refusal("408 Request Timeout", msg)).catch(() => {}).finally(() => end(s));
      } else if (!s.requests.awaitingAnswer && now - s.lastActivity > limits.idleTimeoutMs) {
        end(s);
      }
    }
  }, tick);
  Deno.unrefTimer(timer);

  const relay = async (s: ConnState) => {
    try {
      s.inner = await Deno.connect({ transport: "unix", path: socketPath });
    } catch {
      return end(s);
    }
    if (s.closed) return end(s);
    const up = (async () => {
      const buf = new Uint8Array(64 * 1024);
      for (;;) {
        const n = await s.client.read(buf);
        if (n === null) break;
        const now = performance.now();
        s.lastActivity = now;
        const chunk = buf.subarray(0, n);
        if (!s.requests.feed(chunk, now)) {
          await writeAll(
            s.client,
            refusal("431 Request Header Fields Too Large", "request headers over 64 KiB"),
          );
          break;
        }
        await writeAll(s.inner!, chunk);
      }
      await s.inner!.closeWrite().catch(() => {});
    })();
    const down = (async () => {
      const buf = new Uint8Array(64 * 1024);
      for (;;) {
        const n = await s.inner!.read(buf);
        if (n === null) break;
        s.lastActivity = performance.now();
        s.requests.answering();
        await writeAll(s.client, buf.subarray(0, n));
      }
    })();
    // Either side failing or the server closing ends the connection; a client that closed its
    // sending side still gets its answer.
    await Promise.race([
      down,
      up.then(() => down),
    ]).catch(() => {});
    end(s);
    await Promise.allSettled([up, down]);
  };

  (async () => {
    for await (const client of listener) {
      if (conns.size >= limits.maxConnections) {
        const msg = `too many connections (at most ${limits.maxConnections} at once); retry later`;
        client.write(refusal("429 Too Many Requests", msg, "retry-after: 1\r\n"))
          .catch(() => {})
          .finally(() => {
            try {
              client.close();
            } catch { /* gone */ }
          });
        continue;
      }
      const now = performance.now();
      const s: ConnState = {
        client,
        requests: new RequestTracker(now),
        lastActivity: now,
        closed: false,
      };
      conns.add(s);
      relay(s).catch(() => end(s));
    }
  })().catch(() => {/* the listener was closed */});

  return {
    get open() {
      return conns.size;
    },
    async drained(ms: number) {
      const until = performance.now() + ms;
      while (conns.size > 0 && performance.now() < until) {
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    stopAccepting() {
      try {
        listener.close();
      } catch { /* closed already */ }
    },
    close() {
      clearInterval(timer);
      this.stopAccepting();
      for (const s of [...conns]) end(s);
    },
  };
}

/** Largest header block accepted. */
const MAX_HEADER_BYTES = 64 * 1024;
const END_OF_HEADERS = [13, 10, 13, 10];
const DECODER = new TextDecoder();

/**
 * Follows a connection's requests as the client sends them, just enough to know when one's
 * headers are awaited (the header timeout runs) and when a whole request waits for its answer
 * (the idle timeout does not): header blocks end at `\r\n\r\n`, bodies are `Content-Length`
 * bytes or `chunked`. The server itself parses the requests; this only watches.
 */
export class RequestTracker {
  /** Since when the headers of a request are awaited; undefined when none are. */
  headersSince: number | undefined;
  /** A whole request was sent and the server has not begun answering it. */
  awaitingAnswer = false;
  #phase: "headers" | "length" | "chunk-size" | "chunk-data" | "chunk-crlf" | "trailers" | "sent" =
    "headers";
  /** The header block's bytes so far (usually one slice: a small request's first chunk). */
  #header: Uint8Array[] = [];
  #headerBytes = 0;
  /** How much of the `\r\n\r\n` that ends a header block the last bytes matched. */
  #matched = 0;
  #remaining = 0;
  #line: number[] = [];

  constructor(now: number) {
    this.headersSince = now;
  }

  /** The server wrote: what the client sends next starts a new request. */
  answering(): void {
    this.awaitingAnswer = false;
  }

  /** Follows `chunk` from the client; false when a header block is too large. */
  feed(chunk: Uint8Array, now: number): boolean {
    let i = 0;
    while (i < chunk.length) {
      switch (this.#phase) {
        case "sent":
          // The next request begins (after an answer, or pipelined).
          this.#phase = "headers";
          this.#header = [];
          this.#headerBytes = 0;
          this.#matched = 0;
          this.headersSince = now;
          break;
        case "headers": {
          const at = this.#scanHeaders(chunk, i);
          if (at < 0) return false;
          i = at;
          break;
        }
        case "length": {
          const take = Math.min(this.#remaining, chunk.length - i);
          i += take;
          this.#remaining -= take;
          if (this.#remaining === 0) this.#sent();
          break;
        }
        case "chunk-size":
        case "trailers": {
          const b = chunk[i++];
          this.#line.push(b);
          if (b !== 10) {
            if (this.#line.length > MAX_HEADER_BYTES) return false;
            break;
          }
          const line = DECODER.decode(new Uint8Array(this.#line)).trim();
          this.#line = [];
          if (this.#phase === "trailers") {
            if (line === "") this.#sent();
            break;
          }
          const size = parseInt(line.split(";")[0], 16);
          // A malformed size line: the server refuses the request and answers.
          if (!Number.isFinite(size) || size < 0) this.#sent();
          else if (size === 0) this.#phase = "trailers";
          else {
            this.#remaining = size;
            this.#phase = "chunk-data";
          }
          break;
        }
        case "chunk-data": {
          const take = Math.min(this.#remaining, chunk.length - i);
          i += take;
          this.#remaining -= take;
          if (this.#remaining === 0) {
            this.#remaining = 2;
            this.#phase = "chunk-crlf";
          }
          break;
        }
        case "chunk-crlf": {
          const take = Math.min(this.#remaining, chunk.length - i);
          i += take;
          this.#remaining -= take;
          if (this.#remaining === 0) this.#phase = "chunk-size";
          break;
        }
      }
    }
    return true;
  }

  /**
   * Reads header bytes of `chunk` from `i` up to the blank line that ends the block (then the
   * body begins) or the chunk's end; returns where it stopped, or -1 when the block is too large.
   * Scanning in place, with one slice kept per chunk, costs the front little per request.
   */
  #scanHeaders(chunk: Uint8Array, i: number): number {
    let from = i;
    while (i < chunk.length) {
      const b = chunk[i++];
      // Leading blank lines before a request line are allowed (RFC 9112 §2.2).
      if (this.#headerBytes === 0 && i - 1 === from && (b === 13 || b === 10)) {
        from = i;
        continue;
      }
      if (++this.#headerBytes > MAX_HEADER_BYTES) return -1;
      this.#matched = b === END_OF_HEADERS[this.#matched] ? this.#matched + 1 : b === 13 ? 1 : 0;
      if (this.#matched === 4) {
        this.#header.push(chunk.subarray(from, i));
        const head = this.#header.length === 1 ? this.#header[0] : concatBytes(this.#header);
        this.#header = [];
        this.#headerBytes = 0;
        this.#matched = 0;
        this.headersSince = undefined;
        this.#startBody(DECODER.decode(head));
        return i;
      }
    }
    // The slice is copied: the caller reuses its read buffer.
    if (i > from) this.#header.push(chunk.slice(from, i));
    return i;
  }

  #startBody(head: string): void {
    if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) {
      this.#phase = "chunk-size";
      this.#line = [];
      return;
    }
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
    if (length > 0) {
      this.#remaining = length;
      this.#phase = "length";
    } else this.#sent();
  }

  #sent(): void {
    this.#phase = "sent";
    this.awaitingAnswer = true;
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let at = 0;
  while (at < bytes.length) at += await conn.write(bytes.subarray(at));
}
