/**
 * The ChatML formats with XML tool calls, as tinker-cookbook renders them: Qwen3.5 and 3.6
 * (`qwen3_5`), Qwen3.8 (`qwen3_8_*`) and Nemotron 3 (`nemotron3*`, and `nemotron3_ultra*` for
 * Ultra and 3.5 Lightning). They share `<|im_start|>role\n…<|im_end|>` turns, a think block the
 * generation prompt opens (`<think>\n`) or closes (thinking off), consecutive tool results in one
 * user turn of `<tool_response>` blocks, declared tools as a `# Tools` section of the system
 * message, and tool calls as
 * `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>`.
 * Where they differ, {@link FORMATS} says how (think-block framing of earlier turns, separators,
 * argument values, the system message).
 *
 * A supervised example trains what the model produced after the generation prompt: when the
 * conversation's text starts with the prompt of its last turn, everything up to the end of that
 * prompt carries no weight (the opened `<think>\n` included), as the cookbook's
 * `_train_after_the_generation_prompt` does. With thinking off, a last turn that reasoned is
 * refused: the prompt told the model not to.
 *
 * @module
 */

import { specialTokenId, type Tokenizer } from "../tokenizers/types.ts";
import { argumentsObject, pyJsonAscii } from "./parse.ts";
import { PieceRenderer } from "./piece_renderer.ts";
import {
  contentWithImages,
  encodePieces,
  messageImages,
  type Piece,
  piecesText,
  trainedTurn,
} from "./pieces.ts";
import { toolsInSystemText } from "./tools.ts";
import type {
  Message,
  ParsedResponse,
  SupervisedExample,
  ToolCall,
  ToolSpec,
  TrainOn,
} from "./types.ts";

/** The formats of this family. */
export type QwenXmlFormat = "qwen3_5" | "qwen3_8" | "nemotron3" | "nemotron3_ultra";

/**
 * Reasoning effort: Qwen3.8's `reasoning_effort` (xhigh, medium, low), Nemotron 3 Super's
 * `low_effort` (low) and Ultra's `medium_effort` (medium).
 */
export type QwenXmlEffort = "xhigh" | "medium" | "low";

/** Options of {@link QwenXmlRenderer}. */
export interface QwenXmlOptions {
  format: QwenXmlFormat;
  /** The generation prompt opens the think block (true) or closes it (default false). */
  thinking?: boolean;
  /** Reasoning effort, where the format has one (see {@link QwenXmlEffort}). */
  effort?: QwenXmlEffort;
  /** Nemotron: keep earlier turns' reasoning (`truncate_history_thinking=false`). */
  preserveThinking?: boolean;
}

/** Qwen3.8's system-message sentences per effort (medium adds none). */
export const QWEN3_8_EFFORT: Readonly<Record<QwenXmlEffort, string>> = {
  xhigh: "Reasoning effort is set to xhigh. Please think carefully through the task, " +
    "validate key assumptions, consider plausible alternatives, and prioritize " +
    "correctness, consistency, and clarity in the final answer.",
  medium: "",
  low: "Reasoning effort is set to low. Keep your thinking brief and focused, moving " +
    "directly to the conclusion without unnecessary elaboration.",
};

const EMPTY_THINK = "<think>\n\n</think>\n\n";

const CALL_EXAMPLE = "If you choose to call a function ONLY reply in the following format with " +
  "NO suffix:\n\n<tool_call>\n<function=example_function_name>\n" +
  "<parameter=example_parameter_1>\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\n" +
  "This is the value for the second parameter\nthat can span\nmultiple lines\n</parameter>\n" +
  "</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the " +
  "specified format: an inner <function=...></function> block must be nested within " +
  "<tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n- You may " +
  "provide optional reasoning for your function call in natural language BEFORE the function " +
  "call, but NOT after\n- If there is no function call available, answer the question like " +
  "normal with your current knowledge and do not tell the user about function calls\n" +
  "</IMPORTANT>";

/** A scalar as Python's `str()` writes it (`True`, `None`). */
function pyStr(v: unknown): string {
  if (v === true) return "True";
  if (v === false) return "False";
  if (v === null || v === undefined) return "None";
  return String(v);
}

/** One tool as Nemotron 3's template declares it (XML fields; extra keys as their own tags). */
function nemotronTool(t: ToolSpec): string {
  const extra = (obj: Record<string, unknown>, handled: string[]) =>
    Object.entries(obj).filter(([k]) => !handled.includes(k)).map(([k, v]) =>
      `<${k}>${typeof v === "object" && v !== null ? pyJsonAscii(v) : pyStr(v)}</${k}>`
    );
  const lines = ["<function>", `<name>${t.name}</name>`];
  if (t.description.trim()) lines.push(`<description>${t.description.trim()}</description>`);
  lines.push("<parameters>");
  const params = t.parameters ?? {};
  const props = params.properties as Record<string, Record<string, unknown>> | undefined;
  for (const [name, f] of Object.entries(props ?? {})) {
    lines.push("<parameter>", `<name>${name}</name>`);
    if ("type" in f) lines.push(`<type>${pyStr(f.type)}</type>`);
    if ("description" in f) {
      lines.push(`<description>${String(f.description).trim()}</description>`);
    }
    if ("enum" in f) lines.push(`<enum>${pyJsonAscii(f.enum)}</enum>`);
    lines.push(...extra(f, ["name", "type", "description", "enum"]), "</parameter>");
  }
  lines.push(...extra(params, ["type", "properties", "required"]));
  if ("required" in params) lines.push(`<required>${pyJsonAscii(params.required)}</required>`);
  lines.push("</parameters>", "</function>");
  return lines.join("\n");
}

/** What each format does where they differ. */
interface FormatRules {
  /** The `# Tools` section's list of tools. */
  toolList(tools: readonly ToolSpec[]): string;
  /** Whether the system prompt comes before the tools section (Nemotron) or after (Qwen). */
  systemFirst: boolean;
  /** A reasoning block as written in a turn, with its separator from the text. */
  thinkingText(thinking: string): string;
  /** A tool-call argument value. */
  argument(value: unknown): string;
  /** What separates the text from the first call, and what follows each call. */
  callsPrefix(m: Message): string;
  callEnd: string;
  /** What follows `</tool_response>`, and what opens a further result in the same turn. */
  responseEnd: string;
  responseContinue: string;
  /** The separator between `</think>` and the text, dropped when parsing. */
  parseSeparator: string;
  /** The generation prompt's tail with thinking on and off. */
  open: string;
  closed: string;
}

const QWEN_RULES: Omit<FormatRules, "argument"> = {
  toolList: (tools) =>
    tools.map((t) =>
      pyJsonAscii({ name: t.name, description: t.description, parameters: t.parameters })
    ).join("\n"),
  systemFirst: false,
  thinkingText: (t) => `<think>\n${t}\n</think>\n\n`,
  callsPrefix: (m) => (m.content.trim() ? "\n\n" : ""),
  callEnd: "",
  responseEnd: "",
  responseContinue: "\n",
  parseSeparator: "\n\n",
  open: "<think>\n",
  closed: EMPTY_THINK,
};

const NEMOTRON_RULES: FormatRules = {
  toolList: (tools) => tools.map(nemotronTool).join("\n"),
  systemFirst: true,
  thinkingText: (t) => `<think>\n${t}\n</think>\n`,
  argument: (v) => (typeof v === "object" && v !== null ? pyJsonAscii(v) : pyStr(v)),
  callsPrefix: (m) => (m.thinking !== undefined && !m.content ? "" : "\n"),
  callEnd: "\n",
  responseEnd: "\n",
  responseContinue: "",
  parseSeparator: "\n",
  open: "<think>\n",
  closed: "<think></think>",
};

/** The formats' differences (the cookbook's subclasses of its Qwen3.5 renderer). */
export const FORMATS: Readonly<Record<QwenXmlFormat, FormatRules>> = {
  // Qwen3.5's template writes scalars with `|string` (Python's True/None).
  qwen3_5: { ...QWEN_RULES, argument: NEMOTRON_RULES.argument },
  // Qwen3.8's writes every non-string with `|tojson`.
  qwen3_8: { ...QWEN_RULES, argument: (v) => (typeof v === "string" ? v : pyJsonAscii(v)) },
  nemotron3: NEMOTRON_RULES,
  nemotron3_ultra: {
    ...NEMOTRON_RULES,
    thinkingText: (t) => `<think>\n${t}</think>`,
    callsPrefix: () => "\n",
    parseSeparator: "",
  },
};

const FUNCTION_BLOCK =
  /^\s*<tool_call>\s*<function=([^>\n]+)>\s*([^]*?)\s*<\/function>\s*<\/tool_call>\s*$/;
const PARAM_BLOCK = /<parameter=([^>\n]+)>\s*([^]*?)\s*<\/parameter>/g;

/**
 * One `<tool_call>` block in the XML format, or the reason it is malformed.
 *
 * @example
 * parseXmlToolCall("<tool_call>\n<function=f>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>");
 * // { name: "f", arguments: { x: 1 } }
 */
export function parseXmlToolCall(block: string): ToolCall | { error: string } {
  const m = FUNCTION_BLOCK.exec(block);
  if (!m) return { error: `malformed XML tool call ${JSON.stringify(block)}` };
  const name = m[1].trim();
  if (!name) return { error: "XML tool call without a function name" };
  const body = m[2];
  const args: Record<string, unknown> = {};
  let pos = 0;
  for (const p of body.matchAll(PARAM_BLOCK)) {
    if (body.slice(pos, p.index).trim()) {
      return { error: `unexpected text inside <function=${name}>: ${JSON.stringify(body)}` };
    }
    const key = p[1].trim();
    if (!key) return { error: `empty parameter name in <function=${name}>` };
    const text = p[2].replace(/^\n+|\n+$/g, "");
    try {
      args[key] = JSON.parse(text);
    } catch {
      args[key] = text;
    }
    pos = p.index + p[0].length;
  }
  if (body.slice(pos).trim()) {
    return { error: `unexpected text after the parameters of <function=${name}>` };
  }
  return { name, arguments: args };
}

/** A tool call as the XML block the format writes. */
function xmlToolCall(c: ToolCall, argument: (v: unknown) => string): string {
  const args = (argumentsObject(c.arguments) ?? {}) as Record<string, unknown>;
  const params = Object.entries(args).map(([k, v]) =>
    `<parameter=${k}>\n${argument(v)}\n</parameter>`
  );
  return [`<tool_call>\n<function=${c.name}>`, ...params, "</function>\n</tool_call>"].join("\n");
}

/**
 * Qwen3.5 / 3.6, Qwen3.8 and Nemotron 3 chat formats, as the cookbook's renderers of the same
 * names.
 *
 * @example
 * const r = new QwenXmlRenderer(tokenizer, { format: "qwen3_5", thinking: true });
 * r.buildGenerationPrompt([{ role: "user", content: "hi" }]); // …<|im_start|>assistant\n<think>\n
 */
export class QwenXmlRenderer extends PieceRenderer {
  /** Which format's rules (`qwen3_5`, `qwen3_8`, `nemotron3`, `nemotron3_ultra`). */
  readonly format: QwenXmlFormat;
  /** Whether the assistant thinks (an open `<think>` block) before answering. */
  readonly thinking: boolean;
  /** The reasoning effort, for the formats that take one. */
  readonly effort: QwenXmlEffort | undefined;
  /** Whether earlier turns keep their thinking in the history. */
  readonly preserveThinking: boolean;
  readonly #rules: FormatRules;

  /** A renderer of `opts.format` over `tokenizer`. */
  constructor(
    tokenizer: Tokenizer,
    { format, thinking = false, effort, preserveThinking = false }: QwenXmlOptions,
  ) {
    super(tokenizer, [specialTokenId(tokenizer, "<|im_end|>")]);
    this.format = format;
    this.thinking = thinking;
    this.effort = effort;
    this.preserveThinking = preserveThinking;
    this.#rules = FORMATS[format];
  }

  /** The `# Tools` section in the system message, before or after the system prompt. */
  override declareTools(messages: Message[], tools: readonly ToolSpec[]): Message[] {
    const rules = this.#rules;
    return toolsInSystemText(messages, tools, (t, system) => {
      const section = "# Tools\n\nYou have access to the following functions:\n\n<tools>\n" +
        rules.toolList(t) + "\n</tools>\n\n" + CALL_EXAMPLE;
      if (!system) return section;
      return rules.systemFirst ? `${system}\n\n${section}` : `${section}\n\n${system}`;
    });
  }

  /** The reply: its think block, its text and its `<tool_call>` blocks; malformed ones reported. */
  parseResponse(tokens: number[]): ParsedResponse {
    const { text: sampled, stopped } = this.responseText(tokens);
    // The prompt opened the block: the reply starts inside it.
    let text = !sampled.startsWith("<think>") && sampled.includes("</think>")
      ? `<think>\n${sampled}`
      : sampled;
    const message: Message = { role: "assistant", content: "" };
    const end = text.indexOf("</think>");
    if (text.startsWith("<think>") && end >= 0) {
      const thinking = text.slice("<think>".length, end).trim();
      if (thinking) message.thinking = thinking;
      text = text.slice(end + "</think>".length);
      const sep = this.#rules.parseSeparator;
      if (sep && text.startsWith(sep)) text = text.slice(sep.length);
    }
    const calls: ToolCall[] = [];
    let error: string | undefined;
    const rest = text.replace(/<tool_call>[^]*?<\/tool_call>/g, (block) => {
      const call = parseXmlToolCall(block);
      if ("error" in call) error ??= call.error;
      else calls.push(call);
      return "";
    });
    if (rest.includes("<tool_call>")) error ??= "unterminated <tool_call> block";
    else if (rest.includes("</tool_call>")) error ??= "</tool_call> without its <tool_call>";
    message.content = rest.trim();
    if (calls.length && !error) message.toolCalls = calls;
    return error ? { message, ok: stopped, error } : { message, ok: stopped };
  }

  /**
   * Tokens of the conversation: the trained turns' text after their header, and for a last
   * turn that follows its generation prompt, only what comes after that prompt.
   */
  override buildSupervisedExample(
    messages: Message[],
    opts: { trainOn?: TrainOn } = {},
  ): SupervisedExample {
    if (messageImages(messages).length) {
      throw new Error(`${this.format}: supervised examples with images are not built here`);
    }
    const pieces = this.pieces(messages, false, opts.trainOn ?? "last_assistant");
    const n = messages.length;
    if (n > 0 && messages[n - 1].role === "assistant") {
      const prompt = this.renderText(messages.slice(0, -1), true);
      if (piecesText(pieces).startsWith(prompt)) untrainPrefix(pieces, prompt.length);
      else if (!this.thinking) {
        throw new Error(
          `${this.format} with thinking off: the last turn has reasoning, but its prompt closes the think block; use the thinking renderer, or drop the reasoning`,
        );
      }
    }
    return encodePieces(this.tokenizer, pieces);
  }

  /** Qwen3.5 and 3.8 take images (`<|vision_start|>…<|vision_end|>`); Nemotron 3 none. */
  protected override imageMarkup(slot: string): string | null {
    return this.format.startsWith("qwen") ? `<|vision_start|>${slot}<|vision_end|>` : null;
  }

  /** Qwen3.8's effort sentence and empty-system rule; Nemotron's always-present system turn. */
  #normalize(messages: Message[]): Message[] {
    if (this.format === "nemotron3" || this.format === "nemotron3_ultra") {
      return messages[0]?.role === "system"
        ? messages
        : [{ role: "system", content: "" }, ...messages];
    }
    if (this.format !== "qwen3_8") return messages;
    const sentence = this.thinking ? QWEN3_8_EFFORT[this.effort ?? "xhigh"] : "";
    if (messages[0]?.role !== "system") {
      return sentence ? [{ role: "system", content: sentence }, ...messages] : messages;
    }
    const content = messages[0].content.trim();
    if (!content && !sentence) return messages.slice(1);
    const withSentence = !sentence || content === sentence ||
        content.startsWith(`${sentence}\n\n`)
      ? content
      : content
      ? `${sentence}\n\n${content}`
      : sentence;
    return [{ ...messages[0], content: withSentence }, ...messages.slice(1)];
  }

  /** The think block the header writes before an assistant turn's text, if any. */
  #headerThink(m: Message, i: number, lastUser: number): string {
    const has = m.thinking !== undefined;
    if (this.format === "qwen3_5") return i > lastUser && !has ? EMPTY_THINK : "";
    if (this.format === "qwen3_8") return has ? "" : EMPTY_THINK;
    const historical = i < lastUser;
    const strip = !this.preserveThinking;
    if (has && (!historical || !strip)) return "";
    if (this.format === "nemotron3" && historical && has && m.content && !m.toolCalls?.length) {
      return "<think></think>\n";
    }
    return "<think></think>";
  }

  /** Whether an assistant turn's reasoning is dropped from the render. */
  #stripsThinking(i: number, n: number, lastUser: number): boolean {
    if (this.format === "qwen3_8") return false;
    if (this.format === "qwen3_5") return i !== n - 1;
    return !this.preserveThinking && i < lastUser;
  }

  /** The generation prompt's tail, after `<|im_start|>assistant\n`. */
  #openTail(): string {
    return this.thinking ? this.#rules.open : this.#rules.closed;
  }

  /** The conversation as pieces (text or tokens, each with its loss weight), by this format's rules. */
  protected pieces(messages: Message[], addGenerationPrompt: boolean, trainOn: TrainOn): Piece[] {
    const msgs = this.#normalize(messages);
    const rules = this.#rules;
    const out: Piece[] = [];
    const put = (text: string, train = false) => out.push({ text, train });
    const n = msgs.length;
    const lastUser = msgs.findLastIndex((m) => m.role === "user");
    const nemotron = this.format === "nemotron3" || this.format === "nemotron3_ultra";
    const suffix = `<|im_start|>assistant\n${this.#openTail()}`;
    msgs.forEach((m, i) => {
      const nl = i > 0 ? "\n" : "";
      // String content is stripped; content given as parts (with images) is not.
      const text = contentWithImages(m, (slot) => this.imageMarkup(slot) ?? slot);
      let content = m.thinking === undefined && !m.parts ? text.trim() : text;
      if (m.role === "user" && i === lastUser && this.effort && nemotron) {
        content = `${content}\n\n{reasoning effort: ${this.effort === "low" ? "low" : "efficient"}}`
          .trim();
      }
      if (m.role === "tool") {
        const continues = i > 0 && msgs[i - 1].role === "tool";
        put(continues ? rules.responseContinue : `${nl}<|im_start|>user\n`);
        const closes = i === n - 1 || msgs[i + 1].role !== "tool";
        put(
          `<tool_response>\n${content}\n</tool_response>${rules.responseEnd}` +
            (closes ? "<|im_end|>" : ""),
        );
        return;
      }
      if (m.role !== "assistant") {
        put(`${nl}<|im_start|>${m.role}\n${content}<|im_end|>`);
        return;
      }
      let header = `${nl}<|im_start|>assistant\n${this.#headerThink(m, i, lastUser)}`;
      let body = m.thinking !== undefined && !this.#stripsThinking(i, n, lastUser)
        ? rules.thinkingText(m.thinking) + content
        : content;
      if (m.toolCalls?.length) {
        const calls = m.toolCalls.map((c) => xmlToolCall(c, rules.argument) + rules.callEnd);
        body += rules.callsPrefix(m) + calls.join(rules.callEnd ? "" : "\n");
      }
      // The turn sampled after the generation prompt: what the prompt wrote is the header.
      const produced = i === n - 1 || (nemotron && i >= lastUser);
      if (produced && header.startsWith(nl + suffix)) {
        body = header.slice((nl + suffix).length) + body;
        header = nl + suffix;
      }
      put(header);
      put(`${body}<|im_end|>`, trainedTurn(msgs, i, trainOn));
    });
    if (addGenerationPrompt) put(`${n > 0 ? "\n" : ""}${suffix}`);
    return out;
  }
}

/** Clears the weight of everything before `length` characters (splitting a piece there). */
function untrainPrefix(pieces: Piece[], length: number): void {
  let at = 0;
  for (let k = 0; k < pieces.length && at < length; k++) {
    const p = pieces[k];
    const end = at + p.text.length;
    if (p.train && end > length) {
      pieces.splice(k, 1, { text: p.text.slice(0, length - at), train: false }, {
        text: p.text.slice(length - at),
        train: true,
      });
      return;
    }
    p.train = false;
    at = end;
  }
}
