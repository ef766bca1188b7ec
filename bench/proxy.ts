/**
 * The proxy's cost per request: 200 concurrent sessions of 3 turns on the local backend
 * (`local/tiny`, 8 sampled tokens per turn), played two ways side by side in alternating
 * rounds: calling the sampler directly (render the prompt, `sample`, parse), and through the
 * proxy over HTTP (OpenAI JSON, sessions, the answer back as JSON). The added latency of a
 * request is its latency through the proxy minus the time the proxy spent waiting for the
 * sampler (`Server-Timing: sampler;dur=…`), which takes the sampler's batching noise out.
 *
 * @module
 */

import { startLocalServer } from "../lib/local/server/mod.ts";
import { ModelInput, type SamplingClient, ServiceClient } from "../lib/tinker/mod.ts";
import { getRenderer } from "../lib/renderers/mod.ts";
import type { Message } from "../lib/renderers/types.ts";
import { Policy } from "../lib/proxy/policy.ts";
import { startProxy } from "../lib/proxy/server.ts";

const MODEL = "local/tiny";
const SESSIONS = 200;
const TURNS = 3;
const MAX_TOKENS = 8;
const ROUNDS = 2;

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
async function direct(sampler: SamplingClient): Promise<number[]> {
  const renderer = getRenderer(MODEL);
  const latencies: number[] = [];
  await Promise.all(Array.from({ length: SESSIONS }, async (_, s) => {
    const messages: Message[] = [];
    for (let t = 0; t < TURNS; t++) {
      messages.push(userMessage(s, t));
      const t0 = performance.now();
      const res = await sampler.sample({
        prompt: ModelInput.fromInts(renderer.buildGenerationPrompt(messages)),
        samplingParams: { maxTokens: MAX_TOKENS, temperature: 0.6, stop: renderer.stopSequences() },
      });
      const answer = renderer.parseResponse(res.sequences[0].tokens).message;
      latencies.push(performance.now() - t0);
      messages.push(answer);
    }
  }));
  return latencies;
}

/** The same sessions through the proxy: latency and sampler time of each request. */
async function viaProxy(url: string): Promise<{ latency: number[]; sampler: number[] }> {
  const latency: number[] = [], sampler: number[] = [];
  await Promise.all(Array.from({ length: SESSIONS }, async (_, s) => {
    const messages: { role: string; content: string | null }[] = [];
    const session = `bench-${s}-${crypto.randomUUID().slice(0, 6)}`;
    for (let t = 0; t < TURNS; t++) {
      messages.push(userMessage(s, t));
      const t0 = performance.now();
      const res = await fetch(`${url}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-session-id": session },
        body: JSON.stringify({ model: MODEL, messages, max_tokens: MAX_TOKENS }),
      });
      const body = await res.json();
      const took = performance.now() - t0;
      if (!res.ok) throw new Error(`proxy: HTTP ${res.status}: ${JSON.stringify(body)}`);
      const dur = /sampler;dur=([\d.]+)/.exec(res.headers.get("server-timing") ?? "")?.[1];
      latency.push(took);
      sampler.push(Number(dur));
      messages.push({ role: "assistant", content: body.choices[0].message.content });
    }
  }));
  return { latency, sampler };
}

/** Runs the benchmark; returns the result written to `bench/results/proxy.json`. */
export async function benchProxy(log: (msg: string) => void) {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-bench-proxy-" });
  const server = await startLocalServer({ dataDir });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
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
  const samplerMs: number[] = [];
  try {
    log(`proxy: warm-up (jit compiles of the sampler's shapes)`);
    await direct(sampler);
    await viaProxy(proxy.url);
    for (let round = 1; round <= ROUNDS; round++) {
      log(`proxy: round ${round}/${ROUNDS}: ${SESSIONS} sessions × ${TURNS} turns, direct`);
      directMs.push(...await direct(sampler));
      log(`proxy: round ${round}/${ROUNDS}: the same through the proxy`);
      const p = await viaProxy(proxy.url);
      proxyMs.push(...p.latency);
      samplerMs.push(...p.sampler);
      p.latency.forEach((l, i) => addedMs.push(l - p.sampler[i]));
    }
  } finally {
    await proxy.close();
    service.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
  const added = stats(addedMs);
  return {
    sizes: {
      model: MODEL,
      sessions: SESSIONS,
      turns_per_session: TURNS,
      max_tokens: MAX_TOKENS,
      rounds: ROUNDS,
    },
    machine: { cores: navigator.hardwareConcurrency, deno: Deno.version.deno },
    direct_sampler_call: stats(directMs),
    through_proxy: stats(proxyMs),
    sampler_time_inside_proxy: stats(samplerMs),
    added_per_request: added,
    goal: { added_p50_ms: 2, met: added.p50_ms <= 2 },
  };
}
