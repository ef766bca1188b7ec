/**
 * `deno task bench http`: what the TCP front (lib/http/guard_conn.ts) costs. Every server of
 * the project answers through `serveHttp`, which relays each connection from the public port
 * to the server on a private Unix socket under the connection limits. The same small request
 * is timed against `serveHttp` and against a bare `Deno.serve` on TCP (no front, no limits),
 * side by side in one process, the arms alternating round by round.
 *
 * The client (`fetch`, keeping its connections alive) runs in the same process as both
 * servers, as the proxy's and the backend's clients do in a training run; its own time is in
 * both arms alike.
 *
 * @module
 */

import { median } from "./local_engine.ts";
import { serveHttp } from "../lib/http/mod.ts";

/** Sizes: requests per arm and round, at each number of requests in flight. */
export const HTTP_BENCH = {
  requests: 2000,
  warmup: 200,
  rounds: 3,
  concurrency: [1, 16],
};

/** One arm at one concurrency: latency per request and throughput, medians over rounds. */
export interface HttpArm {
  p50_ms: number;
  p99_ms: number;
  requests_per_s: number;
}

/** One concurrency level: both arms and their ratios (front ÷ bare, > 1 is slower). */
export interface HttpLevel {
  concurrency: number;
  front: HttpArm;
  bare: HttpArm;
  /** front p50 ÷ bare p50. */
  p50_ratio: number;
  /** bare requests/s ÷ front requests/s. */
  throughput_ratio: number;
}

/** What {@link benchHttp} measures. */
export interface HttpBenchResult {
  sizes: typeof HTTP_BENCH & { body_bytes: number };
  load_average: { start: number[]; end: number[] };
  /** Keyed `in_flight_<n>`, so the results page lists each level's numbers. */
  levels: Record<string, HttpLevel>;
}

interface Sample {
  p50: number;
  p99: number;
  rps: number;
}

const BODY = JSON.stringify({ ok: true, model: "local/tiny", tokens: [1, 2, 3, 4] });

function handler(): Response {
  return new Response(BODY, { headers: { "content-type": "application/json" } });
}

/** `n` GETs of `url`, `concurrency` in flight; each request's latency (ms) and the wall time. */
async function drive(url: string, n: number, concurrency: number) {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        const t = performance.now();
        const res = await fetch(url);
        if (res.status !== 200) throw new Error(`http bench: ${url} answered ${res.status}`);
        await res.arrayBuffer();
        latencies.push(performance.now() - t);
      }
    }),
  );
  return { latencies, seconds: (performance.now() - t0) / 1000 };
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

/**
 * Times the front against a bare server; `log` gets one line per round.
 *
 * @example
 * const r = await benchHttp(console.error);
 * console.log(Object.values(r.levels).map((l) => `${l.concurrency}: ${l.p50_ratio.toFixed(2)}x`));
 */
export async function benchHttp(log: (msg: string) => void): Promise<HttpBenchResult> {
  const loadStart = Deno.loadavg();
  const front = await serveHttp(handler, { port: 0, portFlag: "--port" });
  const bare = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  const bareUrl = `http://127.0.0.1:${bare.addr.port}/`;
  const frontUrl = `${front.url}/`;
  const levels: Record<string, HttpLevel> = {};
  try {
    for (const url of [frontUrl, bareUrl]) await drive(url, HTTP_BENCH.warmup, 1);
    for (const concurrency of HTTP_BENCH.concurrency) {
      const rounds: Record<"front" | "bare", Sample[]> = { front: [], bare: [] };
      const arms = [["front", frontUrl], ["bare", bareUrl]] as const;
      for (let round = 1; round <= HTTP_BENCH.rounds; round++) {
        // Alternate which arm goes first: a round's order is not a bias.
        for (const [arm, url] of round % 2 ? arms : [...arms].reverse()) {
          const { latencies, seconds } = await drive(url, HTTP_BENCH.requests, concurrency);
          rounds[arm].push({
            p50: quantile(latencies, 0.5),
            p99: quantile(latencies, 0.99),
            rps: latencies.length / seconds,
          });
        }
        const [f, b] = [rounds.front.at(-1)!, rounds.bare.at(-1)!];
        log(
          `http: ${concurrency} in flight, round ${round}/${HTTP_BENCH.rounds}: p50 ${
            f.p50.toFixed(3)
          } ms through the front, ${b.p50.toFixed(3)} ms bare`,
        );
      }
      const arm = (rs: Sample[]): HttpArm => ({
        p50_ms: median(rs.map((r) => r.p50)),
        p99_ms: median(rs.map((r) => r.p99)),
        requests_per_s: median(rs.map((r) => r.rps)),
      });
      const f = arm(rounds.front), b = arm(rounds.bare);
      levels[`in_flight_${concurrency}`] = {
        concurrency,
        front: f,
        bare: b,
        p50_ratio: f.p50_ms / b.p50_ms,
        throughput_ratio: b.requests_per_s / f.requests_per_s,
      };
    }
  } finally {
    await front.close();
    await bare.shutdown();
  }
  return {
    sizes: { ...HTTP_BENCH, body_bytes: new TextEncoder().encode(BODY).length },
    load_average: { start: loadStart, end: Deno.loadavg() },
    levels,
  };
}

/** The result as a markdown table. */
export function httpTable(r: HttpBenchResult): string {
  const f = (x: number, d = 3) => x.toFixed(d);
  return `| in flight | p50 front (ms) | p50 bare (ms) | p50 ratio | p99 front / bare (ms) | req/s front | req/s bare | throughput ratio |
| --- | --- | --- | --- | --- | --- | --- | --- |
${
    Object.values(r.levels).map((l) =>
      `| ${l.concurrency} | ${f(l.front.p50_ms)} | ${f(l.bare.p50_ms)} | ${f(l.p50_ratio, 2)}× | ${
        f(l.front.p99_ms, 2)
      } / ${f(l.bare.p99_ms, 2)} | ${f(l.front.requests_per_s, 0)} | ${
        f(l.bare.requests_per_s, 0)
      } | ${f(l.throughput_ratio, 2)}× |`
    ).join("\n")
  }
(a ${r.sizes.body_bytes}-byte JSON answer to a GET; ${r.sizes.requests} requests per arm and round, median of ${r.sizes.rounds} rounds; client, front and server in one process)`;
}
