/**
 * From sampled tokens to OpenAI's chat completion: the renderer parses the tokens (thinking into
 * `reasoning_content`, `<tool_call>` blocks into `tool_calls` with fresh `call_…` ids and JSON
 * argument strings), a client's stop string is cut from the content (the tokens keep it: they
 * are what was sampled and what is trained), and log-probs become OpenAI's per-token entries.
 *
 * @module
 */

import type { SampleResponse } from "../protocol/mod.ts";
import type { Message, Renderer } from "../renderers/types.ts";
import type { Tokenizer } from "../tokenizers/types.ts";

/** One sampled choice, parsed. */
export interface SampledChoice {
  /** The sampled tokens, exactly (the stop token or stop string included). */
  tokens: number[];
  logprobs: number[];
  stopReason: "stop" | "length";
  /** The parsed assistant message; tool calls carry their ids. */
  message: Message;
  /** Per completion token, the top alternatives `[token id, log-prob]` (when asked). */
  topLogprobs?: [number, number][][];
}

/** OpenAI's per-token log-prob entry. */
export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
  top_logprobs: { token: string; logprob: number; bytes: number[] | null }[];
}

/** OpenAI's tool call. */
export interface OpenAIToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** Token usage of a request. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/**
 * Parses a sampled sequence into a choice. `clientStops` are the request's stop strings: one
 * that ended the sequence is removed from the content.
 */
export function parseChoice(
  renderer: Renderer,
  seq: SampleResponse["sequences"][number],
  clientStops: readonly string[],
): SampledChoice {
  const message = { ...renderer.parseResponse(seq.tokens).message };
  if (seq.stop_reason === "stop" && clientStops.length) {
    const hit = clientStops.find((s) => message.content.endsWith(s));
    if (hit) message.content = message.content.slice(0, -hit.length);
  }
  if (message.toolCalls) {
    message.toolCalls = message.toolCalls.map((c) => ({ ...c, id: c.id ?? toolCallId() }));
  }
  return {
    tokens: seq.tokens,
    logprobs: seq.logprobs ?? [],
    stopReason: seq.stop_reason,
    message,
  };
}

/** A fresh tool-call id (distinct per call: pi-ai starts a new call when the id changes). */
export function toolCallId(): string {
  return `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
}

/** OpenAI's `finish_reason` of a choice. */
export function finishReason(c: SampledChoice): "stop" | "length" | "tool_calls" {
  if (c.stopReason === "length") return "length";
  return c.message.toolCalls?.length ? "tool_calls" : "stop";
}

/** A tool call in OpenAI's shape: arguments as a JSON string. */
export function openAIToolCall(c: NonNullable<Message["toolCalls"]>[number]): OpenAIToolCall {
  return {
    id: c.id ?? toolCallId(),
    type: "function",
    function: {
      name: c.name,
      arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments),
    },
  };
}

/** The assistant message of a non-streamed choice. */
export function responseMessage(m: Message): Record<string, unknown> {
  const calls = m.toolCalls ?? [];
  return {
    role: "assistant",
    content: calls.length && !m.content ? null : m.content,
    ...(m.thinking ? { reasoning_content: m.thinking } : {}),
    ...(calls.length ? { tool_calls: calls.map(openAIToolCall) } : {}),
  };
}

/** OpenAI's log-prob entries of a choice, one per completion token. */
export function logprobEntries(tokenizer: Tokenizer, c: SampledChoice): TokenLogprob[] {
  return c.tokens.map((id, i) => ({
    ...tokenInfo(tokenizer, id),
    logprob: c.logprobs[i] ?? 0,
    top_logprobs: (c.topLogprobs?.[i] ?? []).map(([t, lp]) => ({
      ...tokenInfo(tokenizer, t),
      logprob: lp,
    })),
  }));
}

function tokenInfo(tokenizer: Tokenizer, id: number): { token: string; bytes: number[] | null } {
  const token = tokenizer.decode([id]);
  // A byte-level token is its byte; a token that is part of a character has no text of its own.
  if (tokenizer.id === "tinkerbench/byte" && id < 256) return { token, bytes: [id] };
  return { token, bytes: token.includes("\uFFFD") ? null : [...new TextEncoder().encode(token)] };
}

/** The non-streamed response body. */
export function completionBody(o: {
  id: string;
  created: number;
  model: string;
  choices: SampledChoice[];
  usage: Usage;
  logprobs: boolean;
  tokenizer: Tokenizer;
}): Record<string, unknown> {
  return {
    id: o.id,
    object: "chat.completion",
    created: o.created,
    model: o.model,
    choices: o.choices.map((c, index) => ({
      index,
      message: responseMessage(c.message),
      finish_reason: finishReason(c),
      logprobs: o.logprobs ? { content: logprobEntries(o.tokenizer, c), refusal: null } : null,
    })),
    usage: o.usage,
  };
}

/** Usage of a request: the prompt once, every choice's sampled tokens. */
export function usageOf(promptTokens: number, choices: SampledChoice[]): Usage {
  const completion = choices.reduce((n, c) => n + c.tokens.length, 0);
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completion,
    total_tokens: promptTokens + completion,
  };
}
