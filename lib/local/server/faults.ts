/**
 * Fault injection for tests of clients: the failures a real cloud service produces (latency,
 * 5xx, 429, 408, expired futures, dropped connections), at configurable rates. Off by default.
 *
 * Faults before the handler leave the request unprocessed; `dropAfter` processes it and then
 * loses the response, which is what exercises a client's retry dedupe.
 *
 * @module
 */

import { z } from "zod";
import { Rng } from "../../util/random.ts";

const rate = z.number().min(0).max(1).default(0);

/** Fault injection settings. Rates are per request probabilities. */
export const FaultConfigSchema: z.ZodObject<
  {
    seed: z.ZodDefault<z.ZodNumber>;
    latencyMs: z.ZodDefault<z.ZodTuple<[z.ZodNumber, z.ZodNumber], null>>;
    serverError: z.ZodDefault<z.ZodNumber>;
    rateLimit: z.ZodDefault<z.ZodNumber>;
    timeout: z.ZodDefault<z.ZodNumber>;
    expired: z.ZodDefault<z.ZodNumber>;
    dropBefore: z.ZodDefault<z.ZodNumber>;
    dropAfter: z.ZodDefault<z.ZodNumber>;
    paths: z.ZodDefault<z.ZodString>;
  },
  z.core.$strip
> = z.object({
  /** Seed of the fault dice, so a failing test replays the same faults. */
  seed: z.number().int().default(0),
  /** Extra latency per request, uniform in [min, max] milliseconds. */
  latencyMs: z.tuple([z.number().min(0), z.number().min(0)]).default([0, 0]),
  /** Answer 500 (or 503) without processing. */
  serverError: rate,
  /** Answer 429 without processing. */
  rateLimit: rate,
  /** Answer 408 without processing. */
  timeout: rate,
  /** Answer 410 on retrieve_future (the client must resubmit; results are not lost). */
  expired: rate,
  /** Drop the connection before processing. */
  dropBefore: rate,
  /** Process the request, then drop the connection so the response is lost. */
  dropAfter: rate,
  /** Only paths matching this regex are affected (default: every API path). */
  paths: z.string().default("^/api/v1/"),
});

/** Fault injection settings. */
export type FaultConfig = z.infer<typeof FaultConfigSchema>;

/** What to do with one request. */
export type FaultDecision =
  | { type: "none"; delayMs: number }
  | { type: "status"; status: 408 | 410 | 429 | 500 | 503; delayMs: number }
  | { type: "dropBefore" | "dropAfter"; delayMs: number };

/** Rolls the dice for each request, reproducibly from the seed. */
export class FaultInjector {
  /** The injected faults' rates. */
  readonly config: FaultConfig;
  readonly #rng: Rng;
  readonly #paths: RegExp;
  /** How many faults of each type were injected, for tests to check. */
  readonly counts: Record<string, number> = {};

  /** Faults at `config`'s rates (unset ones: 0). */
  constructor(config: Partial<FaultConfig>) {
    this.config = FaultConfigSchema.parse(config);
    this.#rng = new Rng(this.config.seed);
    this.#paths = new RegExp(this.config.paths);
  }

  /** Decides the fate of a request to `path`. */
  decide(path: string): FaultDecision {
    const c = this.config;
    const [lo, hi] = c.latencyMs;
    const delayMs = hi > 0 ? lo + this.#rng.uniform() * (hi - lo) : 0;
    if (!this.#paths.test(path)) return { type: "none", delayMs: 0 };
    const isPoll = path.endsWith("/retrieve_future");
    const pick = (p: number) => p > 0 && this.#rng.uniform() < p;
    let d: FaultDecision = { type: "none", delayMs };
    if (pick(c.serverError)) {
      d = { type: "status", status: this.#rng.uniform() < 0.5 ? 500 : 503, delayMs };
    } else if (pick(c.rateLimit)) d = { type: "status", status: 429, delayMs };
    else if (pick(c.timeout)) d = { type: "status", status: 408, delayMs };
    else if (isPoll && pick(c.expired)) d = { type: "status", status: 410, delayMs };
    else if (pick(c.dropBefore)) d = { type: "dropBefore", delayMs };
    else if (pick(c.dropAfter)) d = { type: "dropAfter", delayMs };
    const key = d.type === "status" ? String(d.status) : d.type;
    if (d.type !== "none") this.counts[key] = (this.counts[key] ?? 0) + 1;
    return d;
  }
}

/**
 * A response cut off mid-body: it announces more bytes than it sends, so the client sees a
 * broken connection (the server logs nothing, unlike a stream that errors).
 */
export function droppedConnection(): Response {
  const body = new ReadableStream({
    start(c) {
      c.enqueue(new TextEncoder().encode("{"));
      c.close();
    },
  });
  return new Response(body, {
    status: 200,
    headers: { "content-type": "application/json", "content-length": "4096" },
  });
}

/** The JSON body of an injected error status, shaped like the service's. */
export function faultResponse(status: number): Response {
  const detail = status === 410
    ? "promise expired (fault injection)"
    : `injected fault ${status} (fault injection)`;
  return Response.json({ detail }, { status });
}
