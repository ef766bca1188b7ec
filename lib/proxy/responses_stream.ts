/**
 * The Responses API's stream (./responses.ts): the named SSE events of one response, cut from
 * the whole sampled completion as chat completions' stream is.
 *
 * @module
 */

import type { SampledChoice } from "./completion.ts";
import { type NamedEvent, tokenDeltas } from "./stream.ts";
import type { ApiContext } from "./turn.ts";

/**
 * Responses' stream: `response.created`, `response.in_progress`, then each output item as
 * `output_item.added`, its parts and deltas (one per sampled token for text and reasoning,
 * the arguments as one delta for a call) and `output_item.done`, then `response.completed` (or
 * `response.incomplete`). Cut from the whole completion, as chat completions' stream is.
 */
export function* responseEvents(
  response: Record<string, unknown>,
  choice: SampledChoice,
  api: ApiContext,
): Generator<NamedEvent> {
  let seq = 0;
  const ev = (event: string, data: Record<string, unknown>): NamedEvent => ({
    event,
    data: { type: event, sequence_number: seq++, ...data },
  });
  const pending = { ...response, status: "in_progress", output: [], usage: null };
  yield ev("response.created", { response: pending });
  yield ev("response.in_progress", { response: pending });
  const deltas = tokenDeltas(api.tokenizer, choice);
  const items = response.output as Record<string, unknown>[];
  for (const [output_index, item] of items.entries()) {
    const item_id = item.id;
    if (item.type === "message") {
      yield ev("response.output_item.added", {
        output_index,
        item: { ...item, status: "in_progress", content: [] },
      });
      const part = { type: "output_text", text: "", annotations: [] };
      yield ev("response.content_part.added", { item_id, output_index, content_index: 0, part });
      const text = choice.message.content;
      const pieces = deltas.map((d) => d.content ?? "").filter((d) => d);
      for (const delta of pieces.join("") === text ? pieces : [text]) {
        yield ev("response.output_text.delta", {
          item_id,
          output_index,
          content_index: 0,
          delta,
          logprobs: [],
        });
      }
      yield ev("response.output_text.done", {
        item_id,
        output_index,
        content_index: 0,
        text,
        logprobs: [],
      });
      yield ev("response.content_part.done", {
        item_id,
        output_index,
        content_index: 0,
        part: { ...part, text },
      });
    } else if (item.type === "reasoning") {
      yield ev("response.output_item.added", {
        output_index,
        item: { ...item, status: "in_progress", content: [] },
      });
      const part = { type: "reasoning_text", text: "" };
      yield ev("response.content_part.added", { item_id, output_index, content_index: 0, part });
      const text = choice.message.thinking ?? "";
      const pieces = deltas.map((d) => d.reasoning_content ?? "").filter((d) => d);
      for (const delta of pieces.join("") === text ? pieces : [text]) {
        yield ev("response.reasoning_text.delta", {
          item_id,
          output_index,
          content_index: 0,
          delta,
        });
      }
      yield ev("response.reasoning_text.done", { item_id, output_index, content_index: 0, text });
      yield ev("response.content_part.done", {
        item_id,
        output_index,
        content_index: 0,
        part: { ...part, text },
      });
    } else {
      yield ev("response.output_item.added", {
        output_index,
        item: { ...item, status: "in_progress", arguments: "" },
      });
      yield ev("response.function_call_arguments.delta", {
        item_id,
        output_index,
        delta: item.arguments,
      });
      yield ev("response.function_call_arguments.done", {
        item_id,
        output_index,
        name: item.name,
        arguments: item.arguments,
      });
    }
    yield ev("response.output_item.done", { output_index, item });
  }
  yield ev(
    response.status === "incomplete" ? "response.incomplete" : "response.completed",
    { response },
  );
}
