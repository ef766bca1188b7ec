/**
 * The Kimi K2 chat renderer (K2-Thinking's template; K2.5 renders its text the same way), as
 * the model's jinja template writes it: declared tools as a `tool_declare` system turn of JSON
 * (compact, keys sorted, as the cookbook's `kimi_k2` and K2's own `apply_chat_template` write it);
 * a default system turn when the conversation has none; `<|im_user|>`, `<|im_assistant|>` and
 * `<|im_system|>` turns closed by `<|im_end|>`; assistant turns as `<think>…</think>content`,
 * the reasoning kept only after the last final answer (the agentic turn in progress) and empty
 * before it; tool calls as `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX
 * <|tool_call_argument_begin|>{json}<|tool_call_end|>…<|tool_calls_section_end|>`; tool results
 * as `tool` system turns `## Return of ID\n…`.
 *
 * A supervised example keeps the trained final turn's reasoning: the template empties it (it
 * renders a final answer as history), so here the datum follows what the model produced, and its
 * prompt is the generation prompt the turn was sampled from.
 *
 * Kimi K2.5 and K2.6 (`kimi_k25`, `kimi_k26` and their `_disable_thinking` variants, as the
 * cookbook names them) render the same turns with the generation prompt opening the think block
 * (`<think>`) or closing it (`<think></think>`); `kimi_k26_preserve_thinking` keeps every earlier
 * turn's reasoning. They declare tools in TypeScript style (`./kimi_tools.ts`), as the
 * cookbook's do; K2 declares them as JSON.
 *
 * @module
 */

import { specialTokenId, type Tokenizer } from "../tokenizers/types.ts";
import { leadingThinking, malformedCall, pyJson } from "./parse.ts";
import { PieceRenderer } from "./piece_renderer.ts";
import { contentWithImages, type Piece, trainedTurn } from "./pieces.ts";
import { kimiToolsTypeScript } from "./kimi_tools.ts";
import { openAiTools, toolsOnSystem } from "./tools.ts";
import type { Message, ParsedResponse, ToolCall, ToolSpec, TrainOn } from "./types.ts";

const DEFAULT_SYSTEM = "You are Kimi, an AI assistant created by Moonshot AI.";
const CALL = /<\|tool_call_begin\|>(.*?)<\|tool_call_argument_begin\|>(.*?)<\|tool_call_end\|>/gs;

/**
 * The ids of a conversation's tool calls: the caller's, else Kimi's `functions.NAME:IDX`, IDX
 * the call's place in its message (as the cookbook numbers them).
 */
export function kimiCallIds(messages: readonly Message[]): Map<ToolCall, string> {
  const ids = new Map<ToolCall, string>();
  for (const m of messages) {
    (m.toolCalls ?? []).forEach((c, k) => ids.set(c, c.id ?? `functions.${c.name}:${k}`));
  }
  return ids;
}

/**
 * JSON as the cookbook's `kimi_k2` writes its tool declaration: Python's
 * `json.dumps(value, separators=(",", ":"), sort_keys=True)` (non-ASCII escaped), as Kimi K2's
 * own `apply_chat_template` sorts the keys.
 */
function sortedCompactJson(value: unknown): string {
  const text = (v: unknown): string => {
    if (v === null || v === undefined) return "null";
    if (Array.isArray(v)) return `[${v.map(text).join(",")}]`;
    if (typeof v === "object") {
      const o = v as Record<string, unknown>;
      return `{${
        Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${text(o[k])}`).join(",")
      }}`;
    }
    return JSON.stringify(v);
  };
  return text(value).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** Options of {@link KimiK2Renderer}: K2.5/K2.6's thinking switch and history. */
export interface KimiOptions {
  /** K2.5/K2.6: the generation prompt opens (true) or closes (false) the think block. */
  thinking?: boolean;
  /** Keep every earlier turn's reasoning (K2.6's `preserve_thinking`). */
  preserveThinking?: boolean;
}

/**
 * Kimi K2 chat format (K2.5/K2.6 with {@link KimiOptions}).
 *
 * @example
 * const r = new KimiK2Renderer(tokenizer); // a tokenizer with Kimi's special tokens
 */
export class KimiK2Renderer extends PieceRenderer {
  /** K2.5/K2.6's prompt tail (`<think>` or `<think></think>`); undefined for K2. */
  readonly prefill: string | undefined;
  /** Whether earlier turns keep their thinking in the history. */
  readonly preserveThinking: boolean;

  /** A Kimi K2 renderer over `tokenizer`. */
  constructor(tokenizer: Tokenizer, { thinking, preserveThinking = false }: KimiOptions = {}) {
    super(tokenizer, [specialTokenId(tokenizer, "<|im_end|>")]);
    this.prefill = thinking === undefined ? undefined : thinking ? "<think>" : "<think></think>";
    this.preserveThinking = preserveThinking;
  }

  /**
   * The specs stay on the system message, and the `tool_declare` turn is written before it (a
   * declaration-only system message still gets the default system turn).
   */
  override declareTools(messages: Message[], tools: readonly ToolSpec[]): Message[] {
    return toolsOnSystem(messages, tools);
  }

  /** K2.5/K2.6 take images (`<|media_begin|>image<|media_content|>…<|media_end|>\n`). */
  protected override imageMarkup(slot: string): string | null {
    return this.prefill === undefined
      ? null
      : `<|media_begin|>image<|media_content|>${slot}<|media_end|>\n`;
  }

  /** The assistant message: `<think>` reasoning, content, and the tool-call section. */
  parseResponse(tokens: number[]): ParsedResponse {
    const { text: sampled, stopped } = this.responseText(tokens);
    const { thinking, rest: text } = leadingThinking(sampled);
    const message: Message = { role: "assistant", content: "" };
    if (thinking) message.thinking = thinking;
    const section = text.indexOf("<|tool_calls_section_begin|>");
    message.content = section >= 0 ? text.slice(0, section) : text;
    if (section < 0) return { message, ok: stopped };
    const calls: ToolCall[] = [];
    for (const m of text.slice(section).matchAll(CALL)) {
      const name = m[1].replace(/^functions\./, "").replace(/:\d+$/, "");
      try {
        calls.push({ name, arguments: JSON.parse(m[2]), id: m[1] });
      } catch (e) {
        return { message, ok: stopped, error: malformedCall(m[2], e) };
      }
    }
    if (!text.includes("<|tool_calls_section_end|>")) {
      return { message, ok: stopped, error: "unterminated tool-call section" };
    }
    if (calls.length) message.toolCalls = calls;
    return { message, ok: stopped };
  }

  /** The conversation as pieces (text or tokens, each with its loss weight), by this format's rules. */
  protected pieces(messages: Message[], addGenerationPrompt: boolean, trainOn: TrainOn): Piece[] {
    const out: Piece[] = [];
    const put = (text: string, train = false) => out.push({ text, train });
    const ids = kimiCallIds(messages);
    const n = messages.length;
    // A trained final answer is rendered as the turn the model produced: the history/suffix
    // split is that of the conversation before it, and its reasoning is kept.
    const produced = !addGenerationPrompt && n > 0 && messages[n - 1].role === "assistant" &&
      !messages[n - 1].toolCalls?.length;
    const before = produced ? n - 1 : n;
    const lastFinal = messages.slice(0, before).findLastIndex((m) =>
      m.role === "assistant" && !m.toolCalls?.length
    );
    const tools = messages[0]?.role === "system" ? messages[0].tools : undefined;
    if (tools?.length) {
      const declared = this.prefill === undefined
        ? sortedCompactJson(openAiTools(tools))
        : kimiToolsTypeScript(tools);
      put(`<|im_system|>tool_declare<|im_middle|>${declared}<|im_end|>`);
    }
    // A declaration-only system message stands for no system message.
    const declOnly = messages[0]?.role === "system" && !messages[0].content && !!tools?.length;
    if (messages[0]?.role !== "system" || declOnly) {
      put(`<|im_system|>system<|im_middle|>${DEFAULT_SYSTEM}<|im_end|>`);
    }
    const pending: string[] = [];
    messages.forEach((m, i) => {
      if (i === 0 && declOnly) return;
      if (m.role === "assistant") {
        put("<|im_assistant|>assistant<|im_middle|>");
        const keep = this.preserveThinking || i > lastFinal;
        const calls = (m.toolCalls ?? []).map((c) => {
          pending.push(ids.get(c)!);
          const args = typeof c.arguments === "string" ? c.arguments : pyJson(c.arguments);
          return `<|tool_call_begin|>${
            ids.get(c)
          }<|tool_call_argument_begin|>${args}<|tool_call_end|>`;
        });
        const section = calls.length
          ? `<|tool_calls_section_begin|>${calls.join("")}<|tool_calls_section_end|>`
          : "";
        const train = trainedTurn(messages, i, trainOn);
        const thinking = keep ? m.thinking ?? "" : "";
        if (this.prefill !== undefined && i === n - 1 && !addGenerationPrompt) {
          // The produced turn: its prompt wrote the prefill, the model the rest.
          if (this.prefill !== "<think>" && thinking) {
            throw new Error(
              "kimi with thinking off: this turn has reasoning, but its prompt closes the think block; use the thinking renderer, or drop the reasoning",
            );
          }
          put(this.prefill);
          put(
            `${
              this.prefill === "<think>" ? `${thinking}</think>` : ""
            }${m.content}${section}<|im_end|>`,
            train,
          );
        } else put(`<think>${thinking}</think>${m.content}${section}<|im_end|>`, train);
      } else if (m.role === "tool") {
        // A result names its call; unnamed results answer the calls in order.
        const id = m.toolCallId ?? pending.shift() ?? "unknown";
        const at = pending.indexOf(id);
        if (at >= 0) pending.splice(at, 1);
        put(`<|im_system|>tool<|im_middle|>## Return of ${id}\n${m.content}<|im_end|>`);
      } else if (m.role === "user") {
        const content = contentWithImages(m, (slot) => this.imageMarkup(slot) ?? slot);
        put(`<|im_user|>user<|im_middle|>${content}<|im_end|>`);
      } else put(`<|im_system|>system<|im_middle|>${m.content}<|im_end|>`);
    });
    if (addGenerationPrompt) put(`<|im_assistant|>assistant<|im_middle|>${this.prefill ?? ""}`);
    return out;
  }
}
