/**
 * Matching a request to a session's conversation: whether it continues a served turn (the
 * previous request, possibly less OpenClaw's trailing context messages, then the answer), when
 * two messages are the same for this purpose, and hashes of conversation prefixes for finding
 * the session of a request that names none.
 *
 * @module
 */

import type { Message } from "../renderers/types.ts";

/** Most trailing messages a next request may leave out (OpenClaw's internal context block). */
export const MAX_DROPPED = 2;

/**
 * How `messages` continue a served turn: the length of the matched history (the previous
 * request, less up to two trailing non-assistant messages that were not replayed, then the
 * answer) and how many were left out; null when they do not continue it.
 */
export function extension(
  last: { requestMessages: Message[]; action: Message },
  messages: Message[],
): { prefix: number; dropped: number } | null {
  const prev = last.requestMessages;
  for (let d = 0; d <= Math.min(MAX_DROPPED, prev.length - 1); d++) {
    if (d > 0 && prev[prev.length - d].role === "assistant") break;
    const keep = prev.length - d;
    if (messages.length < keep + 1) continue;
    let ok = sameMessage(messages[keep], last.action);
    for (let i = 0; ok && i < keep; i++) ok = sameMessage(messages[i], prev[i]);
    if (ok) return { prefix: keep + 1, dropped: d };
  }
  return null;
}

/** What a request adds to a session whose last turn it follows: see {@link continuation}. */
export interface Continuation {
  /** How it extends the last turn exactly (null: a history break). */
  ext: { prefix: number; dropped: number } | null;
  /** The messages new since the last turn (from where the request leaves it, on a break). */
  observation: Message[];
  /** The last turn's next state: the new messages, less the trailing ones the client dropped. */
  nextState: Message[];
}

/**
 * What `messages` add to a session whose last turn is `last`. On a history break (an edited or
 * regenerated conversation) the new part starts where the request leaves the previous request.
 * The next state is never empty: with nothing new it is the request's last message.
 */
export function continuation(
  last: { requestMessages: Message[]; action: Message },
  messages: Message[],
): Continuation {
  const ext = extension(last, messages);
  let observation: Message[];
  if (ext) observation = messages.slice(ext.prefix);
  else {
    let k = 0;
    while (k < messages.length && k < last.requestMessages.length) {
      if (!sameMessage(messages[k], last.requestMessages[k])) break;
      k++;
    }
    observation = messages.slice(k);
  }
  const drop = ext ? ext.dropped : 0;
  const nextState = observation.length > drop
    ? observation.slice(0, observation.length - drop)
    : observation.length
    ? observation
    : messages.slice(-1);
  return { ext, observation, nextState };
}

/**
 * Whether a client's message is the same as one the proxy saw or gave: role, content and tool
 * calls (name and arguments). Assistant content is compared trimmed, and reasoning and call ids
 * are ignored: clients differ in whether they send them back.
 */
export function sameMessage(a: Message, b: Message): boolean {
  return messageKey(a) === messageKey(b);
}

function messageKey(m: Message): string {
  const content = m.role === "assistant" ? m.content.trim() : m.content;
  const calls = (m.toolCalls ?? []).map((c) => `${c.name}(${canonicalJson(c.arguments)})`);
  return `${m.role}\u0000${content}\u0000${calls.join("\u0000")}`;
}

function canonicalJson(v: unknown): string {
  if (typeof v === "string") {
    try {
      return canonicalJson(JSON.parse(v));
    } catch {
      return JSON.stringify(v);
    }
  }
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v && typeof v === "object") {
    const entries = Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a < b ? -1 : 1);
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(",")}}`;
  }
  return JSON.stringify(v ?? null);
}

/**
 * Hashes of every prefix of a conversation (`hashes[k]` covers the first k messages): two
 * 32-bit FNV-1a hashes with different seeds, chained message by message.
 */
export function prefixHashes(messages: Message[]): string[] {
  const out = [""];
  let a = 0x811c9dc5, b = 0x01000193 ^ 0x5bd1e995;
  for (const m of messages) {
    const key = messageKey(m) + "\u0001";
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193) >>> 0;
      b = Math.imul(b ^ c, 0x01000193 ^ 0x2f) >>> 0;
    }
    out.push(`${a.toString(36)}.${b.toString(36)}`);
  }
  return out;
}
