/**
 * Mistakes in pretraining transcripts of the tool environments, so a base model has seen what
 * follows one. A format player never errs, so a model pretrained only on its moves has never read
 * "Tool call parse error: …" or "No tool call detected. …": after its first slip at temperature
 * 1 it is off its training distribution and, measured on `local/tools` run 5, writes malformed
 * calls or a bare `</tool_call>` until the episode's turns or context run out, and RL on its
 * episodes learns from little else. A mistake is written as a model makes it, answered as a
 * rollout answers it, and never trained on (weight 0): what is trained is the move after it.
 *
 * @module
 */

import { formatToolCalls } from "../renderers/parse.ts";
import type { Message } from "../renderers/types.ts";
import type { Rng } from "../util/random.ts";

/** The kinds of mistake, in the shapes `local/tools` run 5's malformed turns took. */
export const MISTAKE_KINDS = ["unclosed_json", "empty_call", "no_call", "bare_close"] as const;

/** One kind of mistake. */
export type MistakeKind = typeof MISTAKE_KINDS[number];

/**
 * A wrong version of a correct move (an assistant message with one tool call), as text the
 * renderer writes verbatim:
 * - `unclosed_json`: the call's JSON without its last brace (a parse error);
 * - `empty_call`: `<tool_call>` and `</tool_call>` around nothing (a parse error);
 * - `no_call`: the move's text without its call (the environment says no call was detected);
 * - `bare_close`: only `</tool_call>` (a parse error: it closes a call that never opened).
 *
 * @example
 * const move = { role: "assistant", content: "", toolCalls: [{ name: "guess", arguments: { number: 5 } }] };
 * mistakeOf(move, "unclosed_json").content;
 * // '<tool_call>\n{"name": "guess", "arguments": {"number": 5}\n</tool_call>'
 */
export function mistakeOf(move: Message, kind: MistakeKind): Message {
  const calls = move.toolCalls ?? [];
  if (calls.length === 0) throw new Error("a mistake is made of a move with a tool call");
  const text = move.content;
  const written = formatToolCalls(text, calls.slice(0, 1));
  const content = {
    unclosed_json: text + written.replace(/\}\n<\/tool_call>$/, "\n</tool_call>"),
    empty_call: `${text}${text ? "\n" : ""}<tool_call>\n</tool_call>`,
    no_call: text || "I will call the tool.",
    bare_close: "</tool_call>",
  }[kind];
  return { role: "assistant", content };
}

/** A kind of mistake drawn uniformly. */
export function drawMistake(rng: Rng): MistakeKind {
  return MISTAKE_KINDS[rng.int(MISTAKE_KINDS.length)];
}
