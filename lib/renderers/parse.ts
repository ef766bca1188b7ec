/**
 * Parsing of assistant text shared by the ChatML-shaped renderers: a `<think>…</think>` block
 * and `<tool_call>{"name": …, "arguments": …}</tool_call>` blocks (Qwen's / Hermes' format).
 *
 * @module
 */

import type { Message, ParsedResponse, Renderer, ToolCall } from "./types.ts";

const TOOL_CALL = /<tool_call>(.*?)<\/tool_call>/gs;

/**
 * The text and the tool calls of an assistant turn, or an error for a malformed block; `ok` is
 * whether the sampled turn reached its stop token.
 */
export function parseAssistantText(text: string, ok: boolean): ParsedResponse {
  const message: Message = { role: "assistant", content: text };
  let rest = text;
  const thinkEnd = rest.indexOf("</think>");
  if (thinkEnd >= 0) {
    const before = rest.slice(0, thinkEnd);
    const open = before.lastIndexOf("<think>");
    const thinking = (open >= 0 ? before.slice(open + "<think>".length) : before).replace(
      /^\n+|\n+$/g,
      "",
    );
    if (thinking) message.thinking = thinking;
    rest = rest.slice(thinkEnd + "</think>".length).replace(/^\n+/, "");
  }
  const calls: ToolCall[] = [];
  let error: string | undefined;
  const first = rest.search(/<tool_call>/);
  if (first >= 0) {
    for (const m of rest.matchAll(TOOL_CALL)) {
      try {
        const parsed = JSON.parse(m[1]);
        if (typeof parsed?.name !== "string" || !("arguments" in parsed)) {
          throw new Error("expected {name, arguments}");
        }
        let args = parsed.arguments;
        if (typeof args === "string") {
          try {
            args = JSON.parse(args);
          } catch { /* arguments given as a plain string */ }
        }
        calls.push({ name: parsed.name, arguments: args });
      } catch (e) {
        error ??= malformedCall(m[1].trim(), e);
      }
    }
    const tail = rest.slice(first).replace(TOOL_CALL, "").trim();
    if (tail.includes("<tool_call>")) error ??= "unterminated <tool_call> block";
    if (!error) {
      // The template writes "\n" between content and the first tool call.
      rest = rest.slice(0, first).replace(/\n$/, "") + (tail ? `\n${tail}` : "");
    }
  }
  // A `</tool_call>` that closes no block is a call whose opening the model never wrote (the
  // sampler stops at that tag because it ends a call): malformed, not plain text, so it meets
  // the same rules (`rollout.on_invalid_tool_call`) as a call that does not parse. Without an
  // error, `rest` has no whole block left, so any closing tag in it is such a stray.
  if (!error && rest.includes("</tool_call>")) {
    error = "</tool_call> without its opening <tool_call>";
  }
  message.content = rest;
  if (calls.length && !error) message.toolCalls = calls;
  return error ? { message, ok, error } : { message, ok };
}

/**
 * JSON text as Python's `json.dumps(value, ensure_ascii=False)` writes it (", " and ": "
 * separators), which is what chat templates' `tojson` produces.
 */
export function pyJson(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (Array.isArray(value)) return `[${value.map(pyJson).join(", ")}]`;
  if (typeof value === "object") {
    const items = Object.entries(value as Record<string, unknown>).map(
      ([k, v]) => `${JSON.stringify(k)}: ${pyJson(v)}`,
    );
    return `{${items.join(", ")}}`;
  }
  return JSON.stringify(value);
}

/** JSON as Python's `json.dumps` writes it by default (", " and ": ", non-ASCII escaped). */
export function pyJsonAscii(value: unknown): string {
  return pyJson(value).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * The tool-call blocks of an assistant turn as Qwen's template writes them: a newline before
 * each block except a first one that follows empty content.
 */
export function formatToolCalls(content: string, calls: ToolCall[]): string {
  return calls.map((c, i) => {
    const args = typeof c.arguments === "string" ? c.arguments : pyJson(c.arguments);
    const sep = i > 0 || content ? "\n" : "";
    return `${sep}<tool_call>\n{"name": ${
      JSON.stringify(c.name)
    }, "arguments": ${args}}\n</tool_call>`;
  }).join("");
}

/** A tool call's arguments as an object (they may arrive as JSON text). */
export function argumentsObject(args: unknown): unknown {
  if (typeof args !== "string") return args;
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

/** The error of a tool call whose arguments are not JSON. */
export function malformedCall(args: string, e: unknown): string {
  return `malformed tool call ${JSON.stringify(args)}: ${(e as Error).message}`;
}

/** The reasoning a response opens with (up to `</think>`, `<think>` optional) and the rest. */
export function leadingThinking(text: string): { thinking: string; rest: string } {
  const end = text.indexOf("</think>");
  if (end < 0) return { thinking: "", rest: text };
  return {
    thinking: text.slice(0, end).replace(/^<think>/, ""),
    rest: text.slice(end + "</think>".length),
  };
}

/**
 * A renderer's stop sequences as text: a stop token decoded, a text stop (role_colon's
 * `\n\nUser:`) as it is. What a sampler given text stops (the proxy's, with a client's own) needs.
 */
export function stopTexts(renderer: Renderer): string[] {
  return (renderer.stopSequences() as (number | string)[]).map((x) =>
    typeof x === "number" ? renderer.tokenizer.decode([x]) : x
  );
}
