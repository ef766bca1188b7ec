/**
 * The proxy benchmark's clients, in a worker thread: 200 sessions of OpenAI requests through the
 * proxy, so that parsing their answers does not queue behind the proxy on one event loop (as
 * agents in their own processes would not). Posts back each request's latency and the
 * proxy's `Server-Timing` (sampler time, the proxy's own time).
 *
 * @module
 */

/// <reference lib="deno.worker" />

/** What the benchmark asks the worker to play. */
export interface ClientJob {
  url: string;
  model: string;
  sessions: number;
  turns: number;
  maxTokens: number;
  /** Sessions one after another instead of all at once. */
  sequential: boolean;
}

/** What the worker posts back, one entry per request. */
export interface ClientResult {
  latency: number[];
  sampler: number[];
  handler: number[];
}

self.onmessage = async (e: MessageEvent<ClientJob>) => {
  const job = e.data;
  const out: ClientResult = { latency: [], sampler: [], handler: [] };
  const play = async (s: number) => {
    const messages: { role: string; content: string | null }[] = [];
    const session = `bench-${s}-${crypto.randomUUID().slice(0, 6)}`;
    for (let t = 0; t < job.turns; t++) {
      messages.push({ role: "user", content: `Session ${s}, turn ${t}: guess a number.` });
      const t0 = performance.now();
      const res = await fetch(`${job.url}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-session-id": session },
        body: JSON.stringify({ model: job.model, messages, max_tokens: job.maxTokens }),
      });
      const body = await res.json();
      const took = performance.now() - t0;
      if (!res.ok) throw new Error(`proxy: HTTP ${res.status}: ${JSON.stringify(body)}`);
      const timing = res.headers.get("server-timing") ?? "";
      out.latency.push(took);
      out.sampler.push(Number(/sampler;dur=([\d.]+)/.exec(timing)?.[1]));
      out.handler.push(Number(/proxy;dur=([\d.]+)/.exec(timing)?.[1]));
      messages.push({ role: "assistant", content: body.choices[0].message.content });
    }
  };
  if (job.sequential) { for (let s = 0; s < job.sessions; s++) await play(s); }
  else await Promise.all(Array.from({ length: job.sessions }, (_, s) => play(s)));
  self.postMessage(out);
};
