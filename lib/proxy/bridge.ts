/**
 * Token-exact turns (PrimeIntellect's `bridge_to_next_turn`): when a request continues its
 * session's previous turn, its prompt is that turn's prompt, then the tokens the policy sampled,
 * then only the new messages' tokens. Re-rendering the whole history instead would re-tokenize
 * the sampled answer, and formats that drop earlier thinking (Qwen3) or normalise whitespace
 * would make a prompt the policy never continued from; a session's turns then stop sharing one
 * token sequence, and its training data is no longer what was sampled.
 *
 * The new messages' tokens are where the format's rendering of the whole conversation goes on
 * past its rendering of the history (which ends with the assistant's stop token, as the sampled
 * tokens do). When that cannot be done (the previous answer was cut by the length limit, the
 * history was edited, the tools changed, OpenClaw's trailing context was left out, or the
 * format's rendering of the history is not a prefix of the whole), the prompt is the whole
 * conversation rendered, and the request counts as a history break: it is never merged into the
 * previous turn's sequence as though it continued it.
 *
 * Each prompt also says which message each of its tokens came from ({@link MessageSpan}).
 *
 * @module
 */

import type { Message, Renderer } from "../renderers/types.ts";

/** Prompt tokens `[start, end)` that came from message `message` (-1: the format's own). */
export type MessageSpan = [start: number, end: number, message: number];

/** Prompts with more messages than this get no spans when rendered whole (n renders each). */
export const MAX_SPAN_MESSAGES = 16;

/** What the bridge needs of the session's previous turn (a served turn of ./sessions.ts). */
export interface PreviousTurn {
  /** Its prompt's messages (tools declared). */
  promptMessages: Message[];
  observationTokens: number[];
  actionTokens: number[];
  stopReason: string;
  spans?: MessageSpan[] | null;
}

/** A request's prompt. */
export interface BridgedPrompt {
  tokens: number[];
  /** True when it continues the previous turn's prompt and sampled tokens exactly. */
  bridged: boolean;
  /** Which message each token came from; null when not worked out (a very long history). */
  spans: MessageSpan[] | null;
}

/**
 * The prompt of `messages` (the request's messages with the tools declared), continuing
 * `previous` (the session's previous turn, when the request extends it exactly: the previous
 * request, then its answer, then new messages) when the tokens allow it.
 */
export function bridgePrompt(
  renderer: Renderer,
  messages: Message[],
  previous: PreviousTurn | null,
): BridgedPrompt {
  const full = renderer.buildGenerationPrompt(messages);
  let bridged: BridgedPrompt | null = null;
  try {
    bridged = previous ? bridge(renderer, messages, full, previous) : null;
  } catch {
    // A format that cannot render the history alone: the prompt is rendered whole (a break).
  }
  if (bridged) return bridged;
  return { tokens: full, bridged: false, spans: wholeSpans(renderer, messages, full.length) };
}

function bridge(
  renderer: Renderer,
  messages: Message[],
  full: number[],
  turn: PreviousTurn,
): BridgedPrompt | null {
  // The prompt's messages are the request's with the tools declared: the previous prompt's
  // messages, its answer (as the client echoes it), then the new ones.
  const before = turn.promptMessages.length; // the previous prompt's messages
  const histLen = before + 1; // …then the answer
  if (turn.stopReason !== "stop" || messages.length <= histLen) return null;
  if (JSON.stringify(messages.slice(0, before)) !== JSON.stringify(turn.promptMessages)) {
    return null;
  }
  const last = turn.actionTokens.at(-1);
  if (last === undefined || !endsWithStop(renderer, turn.actionTokens)) return null;
  const history = renderer.buildSupervisedExample(messages.slice(0, histLen)).tokens;
  if (history.at(-1) !== last || !startsWith(full, history)) return null;
  const base = [...turn.observationTokens, ...turn.actionTokens];
  const tokens = [...base, ...full.slice(history.length)];
  let spans: MessageSpan[] | null = null;
  if (turn.spans) {
    spans = [...turn.spans, [turn.observationTokens.length, base.length, before]];
    let at = history.length;
    for (let j = histLen; j < messages.length; j++) {
      const end = renderer.buildSupervisedExample(messages.slice(0, j + 1)).tokens.length;
      if (end > at) {
        spans.push([at - history.length + base.length, end - history.length + base.length, j]);
      }
      at = Math.max(at, end);
    }
    if (at < full.length) {
      spans.push([at - history.length + base.length, tokens.length, -1]);
    }
  }
  return { tokens, bridged: true, spans };
}

/** Spans of a prompt rendered whole: where the rendering of each prefix of the messages ends. */
function wholeSpans(renderer: Renderer, messages: Message[], total: number): MessageSpan[] | null {
  if (messages.length > MAX_SPAN_MESSAGES) return null;
  // Some formats cannot render every prefix (Llama 3 declares tools in the first user
  // message): such a prompt gets no spans.
  try {
    return prefixSpans(renderer, messages, total);
  } catch {
    return null;
  }
}

function prefixSpans(renderer: Renderer, messages: Message[], total: number): MessageSpan[] {
  const spans: MessageSpan[] = [];
  let at = 0;
  for (let j = 0; j < messages.length; j++) {
    const end = renderer.buildSupervisedExample(messages.slice(0, j + 1)).tokens.length;
    if (end > at) spans.push([at, Math.min(end, total), j]);
    at = Math.max(at, end);
  }
  if (at < total) spans.push([at, total, -1]);
  return spans;
}

/** Whether sampled tokens end with one of the renderer's stops (a token id, or a text). */
function endsWithStop(renderer: Renderer, tokens: number[]): boolean {
  const stops: (number | string)[] = renderer.stopSequences();
  if (stops.includes(tokens.at(-1)!)) return true;
  const text = stops.some((s) => typeof s === "string") ? renderer.tokenizer.decode(tokens) : "";
  return stops.some((s) => typeof s === "string" && text.endsWith(s));
}

function startsWith(a: number[], prefix: number[]): boolean {
  if (a.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (a[i] !== prefix[i]) return false;
  return true;
}
