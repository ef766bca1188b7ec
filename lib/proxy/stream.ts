/**
 * Streaming chat completions as Server-Sent Events, in the sequence that the official `openai`
 * client (v4–v7, whose `ChatCompletionStream` assembles chunks) and OpenClaw's pi-ai both
 * accept (reference: wave2-protocols §3.5): no `event:` lines; every chunk carries the same
 * `id`, `created` and `model`; the first delta of a choice has `role: "assistant"` and empty
 * content (and, with log-probs, an empty `logprobs.content`, since openai-node keeps the first
 * chunk's log-probs by reference and would count them twice); then one chunk per sampled token
 * with its text and log-prob; each tool call opens with its `index`, a distinct `id`, `type`
 * and `name`, and its arguments follow as one JSON fragment; a chunk with `finish_reason`; a
 * usage chunk (`choices: []`) when `stream_options.include_usage` is set; `data: [DONE]`.
 *
 * Tinker's sampler answers with the whole completion, so the chunks are cut from it after
 * sampling: the stream has the shape and the per-token pieces of a live one, not its timing.
 *
 * @module
 */

import type { Tokenizer } from "../tokenizers/types.ts";
import {
  finishReason,
  logprobEntries,
  openAIToolCall,
  type SampledChoice,
  type Usage,
} from "./completion.ts";

/** What every chunk of one response shares. */
export interface ChunkHeader {
  id: string;
  created: number;
  model: string;
}

/**
 * The chunks of a streamed response, in order (without the final `[DONE]`).
 *
 * @example
 * for (const chunk of streamChunks(header, choices, { tokenizer, logprobs: false, usage: null })) {
 *   writer.write(`data: ${JSON.stringify(chunk)}\n\n`);
 * }
 */
export function* streamChunks(
  header: ChunkHeader,
  choices: SampledChoice[],
  o: { tokenizer: Tokenizer; logprobs: boolean; usage: Usage | null },
): Generator<Record<string, unknown>> {
  const chunk = (choice: Record<string, unknown> | null, usage: Usage | null = null) => ({
    id: header.id,
    object: "chat.completion.chunk",
    created: header.created,
    model: header.model,
    choices: choice ? [choice] : [],
    usage,
  });
  for (const [index, c] of choices.entries()) {
    const noLogprobs = o.logprobs ? { content: [], refusal: null } : null;
    yield chunk({
      index,
      delta: { role: "assistant", content: "" },
      finish_reason: null,
      logprobs: noLogprobs,
    });
    const entries = o.logprobs ? logprobEntries(o.tokenizer, c) : null;
    for (const [t, delta] of tokenDeltas(o.tokenizer, c).entries()) {
      if (!entries && Object.keys(delta).length === 0) continue;
      yield chunk({
        index,
        delta,
        finish_reason: null,
        logprobs: entries ? { content: [entries[t]], refusal: null } : null,
      });
    }
    for (const [k, call] of (c.message.toolCalls ?? []).map(openAIToolCall).entries()) {
      const open = { index: k, id: call.id, type: "function", function: { ...call.function } };
      open.function.arguments = "";
      yield chunk({ index, delta: { tool_calls: [open] }, finish_reason: null, logprobs: null });
      yield chunk({
        index,
        delta: { tool_calls: [{ index: k, function: { arguments: call.function.arguments } }] },
        finish_reason: null,
        logprobs: null,
      });
    }
    yield chunk({ index, delta: {}, finish_reason: finishReason(c), logprobs: null });
  }
  if (o.usage) yield chunk(null, o.usage);
}

/**
 * Per sampled token, the part of the reasoning and of the content it wrote (empty for markup
 * such as `<think>`, `<tool_call>` blocks and the stop token). Concatenated, the pieces give the
 * message's reasoning and content exactly; when the content is not found verbatim in the decoded
 * tokens, the first token carries all of it.
 */
export function tokenDeltas(
  tokenizer: Tokenizer,
  c: SampledChoice,
): { content?: string; reasoning_content?: string }[] {
  const pieces = decodePieces(tokenizer, c.tokens);
  const full = pieces.join("");
  const deltas: { content?: string; reasoning_content?: string }[] = pieces.map(() => ({}));
  if (deltas.length === 0) {
    return c.message.content ? [{ content: c.message.content }] : [];
  }
  let from = 0;
  for (const field of ["reasoning_content", "content"] as const) {
    const text = field === "content" ? c.message.content : c.message.thinking ?? "";
    if (!text) continue;
    const at = full.indexOf(text, from);
    if (at < 0) {
      deltas[0][field] = text;
      continue;
    }
    let pos = 0;
    pieces.forEach((p, t) => {
      const lo = Math.max(pos, at), hi = Math.min(pos + p.length, at + text.length);
      if (hi > lo) deltas[t][field] = full.slice(lo, hi);
      pos += p.length;
    });
    from = at + text.length;
  }
  return deltas;
}

/**
 * The text each token adds, decoded incrementally: a token that ends inside a multi-byte
 * character adds nothing until the character is complete.
 */
function decodePieces(tokenizer: Tokenizer, tokens: number[]): string[] {
  const pieces: string[] = [];
  let start = 0;
  for (let i = 0; i < tokens.length; i++) {
    const text = tokenizer.decode(tokens.slice(start, i + 1));
    if (text.endsWith("\uFFFD") && i + 1 < tokens.length && i + 1 - start < 4) {
      pieces.push("");
      continue;
    }
    pieces.push(text);
    start = i + 1;
  }
  return pieces;
}

/** An SSE event with its name (Responses, Messages). */
export interface NamedEvent {
  event: string;
  data: unknown;
}

/**
 * An SSE response over chunks. `onDone` runs once the last chunk is handed to the connection,
 * `onCancel` when the client went away before. The first write waits one turn of the event
 * loop, which lets the server notice a client that left while its request was sampled.
 */
export function sseResponse(
  chunks: Iterable<unknown>,
  hooks: { onDone(): void; onCancel(): void },
  headers: Record<string, string> = {},
  { named = false }: {
    /**
     * Each chunk is `{event, data}`, written with its `event:` line and no final `[DONE]` (the
     * Responses and Messages APIs' form).
     */
    named?: boolean;
  } = {},
): Response {
  const encoder = new TextEncoder();
  const it = chunks[Symbol.iterator]();
  let started = false, finished = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!started) {
        started = true;
        await new Promise((resolve) => setTimeout(resolve, 0));
        if (finished) return;
      }
      // A few chunks per write: one write per token would cost a syscall each.
      let text = "";
      for (let k = 0; k < 32; k++) {
        const r = it.next();
        if (r.done) {
          controller.enqueue(encoder.encode(named ? text : `${text}data: [DONE]\n\n`));
          controller.close();
          finished = true;
          hooks.onDone();
          return;
        }
        if (named) {
          const { event, data } = r.value as NamedEvent;
          text += `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
        } else text += `data: ${JSON.stringify(r.value)}\n\n`;
      }
      controller.enqueue(encoder.encode(text));
    },
    cancel() {
      if (finished) return;
      finished = true;
      hooks.onCancel();
    },
  });
  return new Response(body, {
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
      ...headers,
    },
  });
}
