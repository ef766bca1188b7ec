/**
 * Turns as text, for judges, tables and transcripts: a turn keeps messages, and these are the
 * one way to read them as plain text.
 *
 * @module
 */

import { formatToolCalls } from "../renderers/parse.ts";
import type { Message } from "../renderers/types.ts";
import type { Turn } from "./types.ts";

/** Messages' contents, tool calls written out as `<tool_call>` blocks, one message per line. */
export function messagesText(messages: readonly Message[]): string {
  return messages.map((m) => m.content + formatToolCalls(m.content, m.toolCalls ?? [])).join("\n");
}

/** The text of the newest observation message (what the action answered). */
export function observationText(turn: Turn): string {
  return messagesText(turn.observation.slice(-1));
}

/** The text of the action (content and tool calls). */
export function actionText(turn: Turn): string {
  return messagesText([turn.action]);
}

/** The text of the next state ("" when nothing followed). */
export function nextStateText(turn: Turn): string {
  return messagesText(turn.nextState);
}
