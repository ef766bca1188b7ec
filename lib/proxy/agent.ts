/**
 * The reference agent: plays this project's environments through any OpenAI-compatible
 * endpoint (the proxy) with the official `openai` client, the way an external agent would. Each
 * episode is a session: its first answer carries the session's id and secret token
 * (`X-Session-Id`, `X-Session-Token`), and every later request sends the token back (the
 * episode's own name rides along as `X-Session-Id`, a label). The observation is the first user message, the
 * environment's reply (feedback, tool results) the next messages, and, unless told not to, the
 * environment's reward of the previous turn rides on the next request as `X-Turn-Reward`. At the
 * end, `POST /v1/sessions/{id}/done` hands over the last feedback and reward without sampling.
 *
 * Copy it to point your own agent at the proxy: the only proxy-specific parts are the headers
 * and the final call.
 *
 * @module
 */

import OpenAI from "openai";
import { ChatCompletionStream } from "openai/lib/ChatCompletionStream";
import type {
  ChatCompletion,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";
import { make } from "../envs/registry.ts";
import { asMessageEnv } from "../envs/message_env.ts";
import type { Message, ToolCall } from "../renderers/types.ts";

/** Options of {@link runAgent}. */
export interface AgentOptions {
  /** Environment id in the registry, e.g. `game:GuessTheNumber-v0-easy`. */
  envId: string;
  /** The endpoint's OpenAI base URL, e.g. `http://127.0.0.1:30000/v1`. */
  baseUrl: string;
  apiKey?: string;
  /** The model to ask for (default: the first the endpoint lists). */
  model?: string;
  episodes: number;
  /** Episodes played at once. */
  concurrency: number;
  /** Episode i resets its environment with seed + i. */
  seed?: number;
  temperature?: number;
  maxTokens?: number;
  /** Send the environment's rewards as `X-Turn-Reward` (default true). */
  sendRewards?: boolean;
  /** Stream the answers (assembled by the client; default false). */
  stream?: boolean;
  /** Called after each episode. */
  onEpisode?: (e: AgentEpisode) => void;
  /** Stops starting episodes. */
  signal?: AbortSignal;
}

/** One played episode. */
export interface AgentEpisode {
  index: number;
  seed: number;
  /** The proxy's id of the episode's session (the episode's own label until the first answer). */
  sessionId: string;
  turns: number;
  totalReward: number;
  /** The episode's last reward was 1 (solved). */
  success: boolean;
  /** The endpoint's error, when a request failed (the episode stops there). */
  error?: string;
}

/**
 * Plays `episodes` episodes, `concurrency` at a time.
 *
 * @example
 * const episodes = await runAgent({ envId: "game:GuessTheNumber-v0-easy",
 *   baseUrl: "http://127.0.0.1:30000/v1", episodes: 8, concurrency: 4 });
 */
export async function runAgent(o: AgentOptions): Promise<AgentEpisode[]> {
  make(o.envId); // an unknown id fails here, before any request
  const client = new OpenAI({ baseURL: o.baseUrl, apiKey: o.apiKey ?? "none", maxRetries: 2 });
  const model = o.model ?? (await client.models.list()).data[0]?.id;
  if (!model) throw new Error(`${o.baseUrl} lists no model`);
  const out: AgentEpisode[] = [];
  let next = 0;
  const worker = async () => {
    while (next < o.episodes && !o.signal?.aborted) {
      const index = next++;
      const e = await playEpisode(client, model, o, index);
      out.push(e);
      o.onEpisode?.(e);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, o.concurrency) }, worker));
  return out.sort((a, b) => a.index - b.index);
}

async function playEpisode(
  client: OpenAI,
  model: string,
  o: AgentOptions,
  index: number,
): Promise<AgentEpisode> {
  const seed = (o.seed ?? 0) + index;
  const env = asMessageEnv(make(o.envId));
  const label = `agent-${seed}-${crypto.randomUUID().slice(0, 8)}`;
  let sessionId = label;
  let token: string | null = null;
  const { messages: opening } = await env.reset(seed);
  const conversation: ChatCompletionMessageParam[] = opening.map((m) => toOpenAI(m, []));
  const tools = (env.tools ?? []).map((t) => ({
    type: "function" as const,
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
  const e: AgentEpisode = { index, seed, sessionId, turns: 0, totalReward: 0, success: false };
  let reward: number | null = null;
  try {
    for (let t = 0; t < env.maxTurns; t++) {
      const headers: Record<string, string> = { "X-Session-Id": label, "X-Turn-Type": "main" };
      if (token) headers["X-Session-Token"] = token;
      if (reward !== null && o.sendRewards !== false) headers["X-Turn-Reward"] = String(reward);
      const body: Omit<ChatCompletionCreateParamsBase, "stream"> = {
        model,
        messages: conversation,
        ...(tools.length ? { tools } : {}),
        ...(o.temperature === undefined ? {} : { temperature: o.temperature }),
        ...(o.maxTokens === undefined ? {} : { max_tokens: o.maxTokens }),
      };
      let res: ChatCompletion;
      let answered: Response;
      if (o.stream) {
        const { data, response } = await client.chat.completions
          .create({ ...body, stream: true }, { headers }).withResponse();
        res = await ChatCompletionStream.fromReadableStream(data.toReadableStream())
          .finalChatCompletion();
        answered = response;
      } else {
        ({ data: res, response: answered } = await client.chat.completions
          .create(body, { headers }).withResponse());
      }
      // The session's first answer gives its id and token; later ones repeat the id.
      token ??= answered.headers.get("x-session-token");
      sessionId = answered.headers.get("x-session-id") ?? sessionId;
      e.sessionId = sessionId;
      const answer = res.choices[0].message;
      const action = fromOpenAI(answer);
      const step = await env.step(action);
      e.turns++;
      reward = step.reward;
      e.totalReward += step.reward;
      const ids = (answer.tool_calls ?? []).map((c) => c.id);
      conversation.push(
        {
          role: "assistant",
          content: answer.content,
          ...(answer.tool_calls?.length ? { tool_calls: answer.tool_calls } : {}),
        },
        ...step.messages.map((m) => toOpenAI(m, ids)),
      );
      if (step.terminated || step.truncated) break;
    }
    e.success = reward !== null && reward >= 1;
  } catch (err) {
    e.error = (err as Error).message;
  }
  // The last turn's feedback and reward, without sampling an answer nobody reads.
  if (token) {
    await client.post(`/sessions/${encodeURIComponent(sessionId)}/done`, {
      body: { messages: conversation, reward: o.sendRewards === false ? null : reward },
      headers: { "X-Session-Token": token },
    }).catch(() => {}); // the session may have ended already (idle); nothing is lost then
  }
  return e;
}

/** An environment's message for the API; tool results answer the calls in order. */
function toOpenAI(m: Message, callIds: string[]): ChatCompletionMessageParam {
  if (m.role === "tool") {
    return {
      role: "tool",
      content: m.content,
      tool_call_id: m.toolCallId ?? callIds.shift() ?? "",
    };
  }
  if (m.role === "assistant") return { role: "assistant", content: m.content };
  return { role: m.role, content: m.content };
}

/** The API's answer as the environment reads it. */
function fromOpenAI(m: ChatCompletion["choices"][number]["message"]): Message {
  const calls: ToolCall[] = (m.tool_calls ?? []).flatMap((c) => {
    if (c.type !== "function") return [];
    let args: unknown = c.function.arguments;
    try {
      args = JSON.parse(c.function.arguments);
    } catch { /* left as text */ }
    return [{ name: c.function.name, arguments: args, id: c.id }];
  });
  return {
    role: "assistant",
    content: m.content ?? "",
    ...(calls.length ? { toolCalls: calls } : {}),
  };
}
