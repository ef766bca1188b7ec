/**
 * The proxy's cost per request: 200 concurrent sessions of 3 turns on the local backend
 * (`local/tiny`, 8 sampled tokens per turn), played two ways side by side in alternating
 * rounds: calling the sampler directly (render the prompt, `sample` through the Tinker client,
 * parse), and through the proxy over HTTP (OpenAI JSON, sessions, the answer back as JSON). The
 * added latency of a request is its latency through the proxy minus the time the proxy spent
 * waiting for the sampler (`Server-Timing: sampler;dur=…`), which takes the sampler's batching
 * noise out; `handler` is the proxy's own time in the request (`Server-Timing: proxy;dur=…`).
 *
 * Then each API (chat completions, Responses, Messages) side by side: its added latency (p50,
 * p99) with one session at a time and in a burst of 200 sessions.
 *
 * The backend runs in its own process (`deno task serve`), as the Tinker cloud would (in-process,
 * its compute would block the proxy's event loop), and the proxy's clients in a worker thread.
 *
 * @module
 */

import { ModelInput, type SamplingClient, ServiceClient } from "../lib/tinker/mod.ts";
import { getRenderer } from "../lib/renderers/mod.ts";
import type { Message } from "../lib/renderers/types.ts";
import { Policy } from "../lib/proxy/policy.ts";
import { startProxy } from "../lib/proxy/server.ts";
import type { ClientJob, ClientResult, ProxyApi } from "./proxy_clients.ts";
import { startServerProcess } from "../lib/http/mod.ts";

const MODEL = "local/tiny";
/** The sizes (`--smoke` shrinks them, see bench/smoke.ts). */
export const PROXY_BENCH = {
  sessions: 200,
  turns: 3,
  maxTokens: 8,
  rounds: 2,
  /** The uncontended case: sessions of 3 turns, one after another, this many per round. */
  aloneSessions: 8,
};
/** The APIs compared side by side (after the chat completions rounds above). */
const APIS: ProxyApi[] = ["chat", "responses", "messages"];

/** Quantile of a sample (linear interpolation). */
function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos), hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

const stats = (xs: number[]) => ({
  n: xs.length,
  p50_ms: quantile(xs, 0.5),
  p99_ms: quantile(xs, 0.99),
  mean_ms: xs.reduce((a, b) => a + b, 0) / xs.length,
});

const userMessage = (s: number, t: number): Message => ({
  role: "user",
  content: `Session ${s}, turn ${t}: guess a number.`,
});

/** Sessions calling the sampler directly: latency of each request (render, sample, parse). */
async function direct(
  sampler: SamplingClient,
  sessions = PROXY_BENCH.sessions,
  turns = PROXY_BENCH.turns,
): Promise<number[]> {
  const renderer = getRenderer(MODEL);
  const latencies: number[] = [];
  await Promise.all(Array.from({ length: sessions }, async (_, s) => {
    const messages: Message[] = [];
    for (let t = 0; t < turns; t++) {
      messages.push(userMessage(s, t));
      const t0 = performance.now();
      const res = await sampler.sample({
        prompt: ModelInput.fromInts(renderer.buildGenerationPrompt(messages)),
        samplingParams: {
          maxTokens: PROXY_BENCH.maxTokens,
          temperature: 0.6,
          stop: renderer.stopSequences(),
        },
      });
      const answer = renderer.parseResponse(res.sequences[0].tokens).message;
      latencies.push(performance.now() - t0);
      messages.push(answer);
    }
  }));
  return latencies;
}

/** The same sessions through the proxy, played from a worker thread (./proxy_clients.ts). */
async function viaProxy(
  url: string,
  sessions = PROXY_BENCH.sessions,
  sequential = false,
  api: ProxyApi = "chat",
): Promise<ClientResult> {
  const worker = new Worker(new URL("./proxy_clients.ts", import.meta.url), { type: "module" });
  try {
    const { promise, resolve, reject } = Promise.withResolvers<ClientResult>();
    worker.onmessage = (e: MessageEvent<ClientResult>) => resolve(e.data);
    worker.onerror = (e) => {
      e.preventDefault();
      reject(new Error(`bench clients: ${e.message}`));
    };
    const job: ClientJob = {
      url,
      model: MODEL,
      sessions,
      turns: PROXY_BENCH.turns,
      sequential,
      maxTokens: PROXY_BENCH.maxTokens,
      api,
    };
    worker.postMessage(job);
    return await promise;
  } finally {
    worker.terminate();
  }
}

/** `deno task serve` on a free port, in its own process, found through its ready file. */
async function startBackend(dataDir: string): Promise<{ url: string; stop(): Promise<void> }> {
  const child = await startServerProcess({
    script: new URL("../scripts/serve.ts", import.meta.url).pathname,
    args: ["--port", "0", "--data-dir", dataDir],
  });
  return {
    url: child.listening,
    async stop() {
      await child.stop("SIGINT");
    },
  };
}

/** One API's added latency (ms), one session at a time and in a burst. */
export interface ApiLatency {
  one_session_at_a_time: { added_per_request: ReturnType<typeof stats> };
  burst: {
    sessions: number;
    through_proxy: ReturnType<typeof stats>;
    added_per_request: ReturnType<typeof stats>;
  };
}

/** The per-API rows of the result, as a Markdown table. */
export function apiTable(apis: Partial<Record<ProxyApi, ApiLatency>>): string {
  const f = (x: number) => x.toFixed(1);
  const rows = Object.entries(apis).map(([api, a]) =>
    `| ${api} | ${f(a.one_session_at_a_time.added_per_request.p50_ms)} | ${
      f(a.one_session_at_a_time.added_per_request.p99_ms)
    } | ${f(a.burst.added_per_request.p50_ms)} | ${f(a.burst.added_per_request.p99_ms)} |`
  );
  return [
    "| added by the proxy (ms), per API | alone p50 | alone p99 | burst p50 | burst p99 |",
    "| --- | --- | --- | --- | --- |",
    ...rows,
  ].join("\n");
}

/** Runs the benchmark; returns the result written to `bench/results/proxy.json`. */
export async function benchProxy(log: (msg: string) => void) {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-bench-proxy-" });
  const backend = await startBackend(dataDir);
  const service = await ServiceClient.connect({ baseUrl: backend.url, apiKey: "tml-local" });
  const sampler = await service.createSamplingClient({ baseModel: MODEL });
  const proxy = await startProxy({
    policy: new Policy(sampler, 0),
    renderer: getRenderer(MODEL),
    modelName: MODEL,
    contextLength: 256,
    hostname: "127.0.0.1",
    port: 0,
  });
  const directMs: number[] = [], proxyMs: number[] = [], addedMs: number[] = [];
  const samplerMs: number[] = [], handlerMs: number[] = [];
  const alone = { direct: [] as number[], proxy: [] as number[], added: [] as number[] };
  const perApi: Partial<Record<ProxyApi, ApiLatency>> = {};
  const addedOf = (r: ClientResult) => r.latency.map((l, i) => l - r.sampler[i]);
  try {
    log(`proxy: warm-up (jit compiles of the sampler's shapes)`);
    await direct(sampler);
    await viaProxy(proxy.url);
    for (let round = 1; round <= PROXY_BENCH.rounds; round++) {
      log(
        `proxy: round ${round}/${PROXY_BENCH.rounds}: ${PROXY_BENCH.sessions} sessions × ${PROXY_BENCH.turns} turns, direct`,
      );
      directMs.push(...await direct(sampler));
      log(`proxy: round ${round}/${PROXY_BENCH.rounds}: the same through the proxy`);
      const p = await viaProxy(proxy.url);
      proxyMs.push(...p.latency);
      samplerMs.push(...p.sampler);
      p.handler.forEach((h, i) => handlerMs.push(h - p.sampler[i]));
      p.latency.forEach((l, i) => addedMs.push(l - p.sampler[i]));
      log(
        `proxy: round ${round}/${PROXY_BENCH.rounds}: ${PROXY_BENCH.aloneSessions} sessions one at a time`,
      );
      for (let k = 0; k < PROXY_BENCH.aloneSessions; k++) {
        alone.direct.push(...await direct(sampler, 1, PROXY_BENCH.turns));
      }
      const q = await viaProxy(proxy.url, PROXY_BENCH.aloneSessions, true);
      alone.proxy.push(...q.latency);
      q.latency.forEach((l, i) => alone.added.push(l - q.sampler[i]));
    }
    // Each API side by side: the added latency one session at a time and in a burst.
    for (const api of APIS) {
      log(
        `proxy: ${api}: ${PROXY_BENCH.aloneSessions} sessions one at a time, then ${PROXY_BENCH.sessions} at once`,
      );
      await viaProxy(proxy.url, PROXY_BENCH.aloneSessions, true, api); // warm-up: the route's first JIT
      const one = await viaProxy(proxy.url, PROXY_BENCH.aloneSessions, true, api);
      const burst = await viaProxy(proxy.url, PROXY_BENCH.sessions, false, api);
      perApi[api] = {
        one_session_at_a_time: { added_per_request: stats(addedOf(one)) },
        burst: {
          sessions: PROXY_BENCH.sessions,
          through_proxy: stats(burst.latency),
          added_per_request: stats(addedOf(burst)),
        },
      };
    }
  } finally {
    await proxy.close();
    service.close();
    await backend.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
  const added = stats(addedMs);
  return {
    apis: perApi,
    sizes: {
      model: MODEL,
      sessions: PROXY_BENCH.sessions,
      turns_per_session: PROXY_BENCH.turns,
      max_tokens: PROXY_BENCH.maxTokens,
      rounds: PROXY_BENCH.rounds,
    },
    machine: { cores: navigator.hardwareConcurrency, deno: Deno.version.deno },
    direct_sampler_call: stats(directMs),
    through_proxy: stats(proxyMs),
    sampler_time_inside_proxy: stats(samplerMs),
    added_per_request: added,
    proxy_handler_time_without_sampler: stats(handlerMs),
    one_session_alone: {
      direct_sampler_call: stats(alone.direct),
      through_proxy: stats(alone.proxy),
      added_per_request: stats(alone.added),
    },
    goal: { added_p50_ms: 2, met_under_load: added.p50_ms <= 2 },
  };
}
