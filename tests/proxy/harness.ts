/**
 * The proxy in front of the real local backend, for tests: a `local/tiny` policy (or
 * `local/games`, whose 1024-token context fits Qwen's tool declarations), the proxy on a free
 * port, and the official `openai` client pointed at it.
 *
 * Tests that must see given answers (tool calls, thinking) use {@link forced}: the real sampler
 * with teacher forcing, so the completion's tokens are given and its log-probs (and top-k
 * alternatives) are the real model's.
 */

import OpenAI from "openai";

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;
import { startLocalServer } from "../../lib/local/server/mod.ts";
import type { FaultConfig } from "../../lib/local/server/faults.ts";
import { ModelInput, type SamplingClient, ServiceClient } from "../../lib/tinker/mod.ts";
import { getRenderer } from "../../lib/renderers/mod.ts";
import { Policy } from "../../lib/proxy/policy.ts";
import type { ProxyOptions } from "../../lib/proxy/options.ts";
import { type RunningProxy, startProxy } from "../../lib/proxy/server.ts";
import type { Sampler } from "../../lib/rollout/mod.ts";
import type { SampleResponse } from "../../lib/protocol/mod.ts";

/** Both local models are ChatML over bytes. */
export const renderer = getRenderer("local/tiny");
const CONTEXT: Record<string, number> = { "local/tiny": 256, "local/games": 1024 };

/** Everything a proxy test uses. */
export interface ProxyHarness {
  service: ServiceClient;
  sampler: SamplingClient;
  policy: Policy;
  proxy: RunningProxy;
  client: OpenAI;
}

/** Runs `fn` against a proxy serving `model` (default `local/tiny`) on the local backend. */
export async function withProxy<T>(
  fn: (h: ProxyHarness) => Promise<T>,
  o: {
    model?: string;
    options?: Partial<ProxyOptions>;
    apiKey?: string;
    wrap?: (s: SamplingClient, service: ServiceClient) => Sampler;
    /** Fault injection on the local backend. */
    faults?: Partial<FaultConfig>;
  } = {},
): Promise<T> {
  const model = o.model ?? "local/tiny";
  const dataDir = await Deno.makeTempDir({ prefix: "tb-proxy-" });
  const server = await startLocalServer({ dataDir, faults: o.faults });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  let proxy: RunningProxy | undefined;
  try {
    const sampler = await service.createSamplingClient({ baseModel: model });
    const policy = new Policy(o.wrap ? o.wrap(sampler, service) : sampler, 0);
    proxy = await startProxy({
      policy,
      renderer,
      modelName: model,
      contextLength: CONTEXT[model],
      hostname: "127.0.0.1",
      port: 0,
      apiKey: o.apiKey,
      ...o.options,
    });
    const client = new OpenAI({ baseURL: proxy.url, apiKey: o.apiKey ?? "none", maxRetries: 0 });
    return await fn({ service, sampler, policy, proxy, client });
  } finally {
    await proxy?.close();
    service.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}

/**
 * The real sampler with teacher forcing: when `answer` gives a text for a prompt, the
 * completion is that text and the stop token, and its log-probs are the model's own (one
 * prompt-log-prob pass over prompt + completion); other prompts are sampled as usual.
 */
export function forced(
  sampler: SamplingClient,
  answer: (prompt: string) => string | null,
): Sampler {
  return {
    async sample(args): Promise<SampleResponse> {
      const prompt = ModelInput.toInts(args.prompt);
      const text = args.topkPromptLogprobs ? null : answer(renderer.tokenizer.decode(prompt));
      if (text === null) return await sampler.sample(args);
      const max = args.samplingParams?.maxTokens ?? 1;
      const all = renderer.tokenizer.encode(`${text}<|im_end|>`);
      const tokens = all.slice(0, max);
      const lps = await sampler.computeLogprobs(ModelInput.fromInts([...prompt, ...tokens]));
      return {
        sequences: Array.from({ length: args.numSamples ?? 1 }, () => ({
          tokens,
          logprobs: lps.slice(prompt.length) as number[],
          stop_reason: tokens.length === all.length ? "stop" as const : "length" as const,
        })),
        prompt_cache_hit_tokens: 0,
      };
    },
  };
}

/** Reads a streamed response's raw SSE lines (to check the wire, not a client's reading of it). */
export async function sseLines(res: Response): Promise<string[]> {
  return (await res.text()).split("\n").filter((l) => l.length > 0);
}

/**
 * One chat request of a conversation: the answer as a client replays it, the session's id, and
 * (for the request that opened the session) its token.
 */
export async function askFor(
  client: OpenAI,
  messages: Msg[],
  headers: Record<string, string> = {},
  extra: Record<string, unknown> = {},
): Promise<{ answer: Msg; id: string | null; token: string | null }> {
  const { data, response } = await client.chat.completions.create(
    { model: "local/tiny", messages, max_tokens: 4, ...extra } as never,
    { headers },
  ).withResponse();
  const res = data as OpenAI.Chat.Completions.ChatCompletion;
  return {
    answer: { role: "assistant", content: res.choices[0].message.content },
    id: response.headers.get("x-session-id"),
    token: response.headers.get("x-session-token"),
  };
}
