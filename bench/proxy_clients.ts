/**
 * The proxy benchmark's clients, in a worker thread: 200 sessions of requests (chat completions,
 * Responses or Messages) through the
 * proxy, so that parsing their answers does not queue behind the proxy on one event loop (as
 * agents in their own processes would not). Posts back each request's latency and the
 * proxy's `Server-Timing` (sampler time, the proxy's own time).
 *
 * @module
 */

/// <reference lib="deno.worker" />

/** The proxy's APIs a job can play. */
export type ProxyApi = "chat" | "responses" | "messages";

/** What the benchmark asks the worker to play. */
export interface ClientJob {
  url: string;
  model: string;
  sessions: number;
  turns: number;
  maxTokens: number;
  /** Sessions one after another instead of all at once. */
  sequential: boolean;
  /** Which API the requests speak (default chat completions). */
  api?: ProxyApi;
}

/** What the worker posts back, one entry per request. */
export interface ClientResult {
  latency: number[];
  sampler: number[];
  handler: number[];
}

type Msg = { role: string; content: string };

/** A request of `api` for a conversation, and how to read its answer's text. */
function request(job: ClientJob, messages: Msg[]): { path: string; body: unknown } {
  const api = job.api ?? "chat";
  if (api === "responses") {
    return {
      path: "/responses",
      body: { model: job.model, input: messages, max_output_tokens: job.maxTokens },
    };
  }
  if (api === "messages") {
    return {
      path: "/messages",
      body: { model: job.model, messages, max_tokens: job.maxTokens },
    };
  }
  return {
    path: "/chat/completions",
    body: { model: job.model, messages, max_tokens: job.maxTokens },
  };
}

// deno-lint-ignore no-explicit-any
function answerText(api: ProxyApi, body: any): string {
  if (api === "responses") {
    return body.output.find((o: { type: string }) => o.type === "message")?.content[0].text ?? "";
  }
  if (api === "messages") {
    return body.content.find((b: { type: string }) => b.type === "text")?.text ?? "";
  }
  return body.choices[0].message.content ?? "";
}

self.onmessage = async (e: MessageEvent<ClientJob>) => {
  const job = e.data;
  const api = job.api ?? "chat";
  const out: ClientResult = { latency: [], sampler: [], handler: [] };
  const play = async (s: number) => {
    const messages: Msg[] = [];
    // The session's token, from its first answer: later turns continue it.
    let token: string | null = null;
    for (let t = 0; t < job.turns; t++) {
      messages.push({ role: "user", content: `Session ${s}, turn ${t}: guess a number.` });
      const { path, body: req } = request(job, messages);
      const t0 = performance.now();
      const res: Response = await fetch(`${job.url}${path}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(token ? { "x-session-token": token } : {}),
        },
        body: JSON.stringify(req),
      });
      const body = await res.json();
      const took = performance.now() - t0;
      if (!res.ok) throw new Error(`proxy ${path}: HTTP ${res.status}: ${JSON.stringify(body)}`);
      token ??= res.headers.get("x-session-token");
      const timing = res.headers.get("server-timing") ?? "";
      out.latency.push(took);
      out.sampler.push(Number(/sampler;dur=([\d.]+)/.exec(timing)?.[1]));
      out.handler.push(Number(/proxy;dur=([\d.]+)/.exec(timing)?.[1]));
      messages.push({ role: "assistant", content: answerText(api, body) });
    }
  };
  if (job.sequential) { for (let s = 0; s < job.sessions; s++) await play(s); }
  else await Promise.all(Array.from({ length: job.sessions }, (_, s) => play(s)));
  self.postMessage(out);
};
