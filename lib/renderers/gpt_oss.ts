/**
 * The gpt-oss renderer as tinker-cookbook's `gpt_oss_*` renderers write OpenAI's harmony format
 * (`renderers/gpt_oss.py`): `gpt_oss_no_sysprompt` writes no system message;
 * `gpt_oss_{low,medium,high}_reasoning` open with one (identity, knowledge cutoff, date,
 * `Reasoning: <effort>`, the valid channels). Declared tools add a second system block ("Calls
 * to these tools must go to the commentary channel: 'functions'.") and a developer block with
 * the system prompt as `# Instructions` and the tools as a TypeScript-like `namespace
 * functions`; a system prompt without tools is a developer block of its own. Every assistant
 * turn keeps its reasoning on the `analysis` channel, earlier turns included (so a conversation
 * only grows); text beside tool calls goes on `commentary`, an answer on `final`, ending with
 * `<|return|>` when it is the last message and `<|end|>` before; each call is
 * `<|start|>assistant to=functions.NAME<|channel|>commentary <|constrain|>json<|message|>{args}<|call|>`;
 * a result is `<|start|>functions.NAME to=assistant<|channel|>commentary<|message|>…<|end|>`.
 *
 * The model's own jinja template differs (earlier reasoning dropped, tools in the first system
 * block, JSON-encoded results): `gpt_oss_template_*` (`gpt_oss_template.ts`) renders that.
 *
 * @module
 */

import { specialTokenId, type Tokenizer } from "../tokenizers/types.ts";
import { argumentsObject, pyJson } from "./parse.ts";
import { PieceRenderer } from "./piece_renderer.ts";
import { type Piece, trainedTurn } from "./pieces.ts";
import { toolsOnSystem } from "./tools.ts";
import type { Message, ParsedResponse, ToolCall, ToolSpec, TrainOn } from "./types.ts";

/** gpt-oss's reasoning effort (the system message's `Reasoning:` line). */
export type ReasoningEffort = "low" | "medium" | "high";

/** Options of {@link GptOssRenderer}. */
export interface GptOssOptions {
  /** Open with the system message at this effort; absent: no system message (no_sysprompt). */
  reasoningEffort?: ReasoningEffort;
  /** The system message's "Current date" (default: today, UTC). */
  date?: string;
}

type Schema = Record<string, unknown>;

/** A JSON Schema type as the cookbook writes it in TypeScript-like syntax. */
function tsType(s: Schema): string {
  const alt = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (alt) return alt.map(tsType).join(" | ");
  const type = s.type ?? "any";
  if (Array.isArray(type)) return type.map((t) => tsType({ type: t })).join(" | ");
  let base: string;
  if (type === "string") {
    if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(" | ");
    base = "string";
  } else if (type === "number" || type === "integer") base = "number";
  else if (type === "boolean") base = "boolean";
  else if (type === "array") base = `${tsType((s.items ?? {}) as Schema)}[]`;
  else if (type === "object") base = tsObject(s);
  else base = "any";
  return s.nullable ? `${base} | null` : base;
}

function tsObject(s: Schema): string {
  if (s.type !== "object") return "any";
  const required = (s.required ?? []) as string[];
  const props = Object.entries((s.properties ?? {}) as Record<string, Schema>);
  return "{ " +
    props.map(([k, p]) => `${k}${required.includes(k) ? "" : "?"}: ${tsType(p)}`).join(", ") +
    " }";
}

function comments(s: Schema): string[] {
  const out: string[] = [];
  if (s.title) out.push(String(s.title), "");
  if (s.description) out.push(String(s.description));
  if (Array.isArray(s.examples)) out.push("Examples:", ...s.examples.map((e) => `- ${pyJson(e)}`));
  return out;
}

/** One tool as the cookbook's `_format_tool_definition` writes it. */
export function harmonyToolDefinition(t: ToolSpec): string {
  const p = t.parameters ?? {};
  const props = Object.entries((p.properties ?? {}) as Record<string, Schema>);
  let block = "()";
  if (p.type === "object" && props.length) {
    const required = (p.required ?? []) as string[];
    const lines = [`(_:${p.description ? ` // ${p.description}` : ""}`, "{"];
    for (const [k, s] of props) {
      lines.push(...comments(s).map((c) => `// ${c}`));
      const def = "default" in s ? ` // default: ${pyJson(s.default)}` : "";
      lines.push(`${k}${required.includes(k) ? "" : "?"}: ${tsType(s)},${def}`);
    }
    lines.push("})");
    block = lines.join("\n");
  }
  return (t.description ? `// ${t.description}\n` : "") + `type ${t.name} = ${block} => any;`;
}

const SYSTEM = "You are ChatGPT, a large language model trained by OpenAI.\n" +
  "Knowledge cutoff: 2024-06\nCurrent date: {date}\n\nReasoning: {effort}\n\n" +
  "# Valid channels: analysis, commentary, final. Channel must be included for every message.";
const ROUTING = "Calls to these tools must go to the commentary channel: 'functions'.";
const ENDS = ["<|end|>", "<|call|>", "<|return|>"];

/**
 * gpt-oss (harmony) as the cookbook renders it.
 *
 * @example
 * const r = new GptOssRenderer(getTokenizer("openai/gpt-oss-20b")); // gpt_oss_no_sysprompt
 */
export class GptOssRenderer extends PieceRenderer {
  /** The system message's reasoning effort (undefined: none written). */
  readonly reasoningEffort: ReasoningEffort | undefined;
  /** The date the system message gives. */
  readonly date: string;

  /** A gpt-oss (harmony) renderer over `tokenizer`. */
  constructor(
    tokenizer: Tokenizer,
    { reasoningEffort, date = new Date().toISOString().slice(0, 10) }: GptOssOptions = {},
  ) {
    super(tokenizer, [
      specialTokenId(tokenizer, "<|return|>"),
      specialTokenId(tokenizer, "<|call|>"),
    ]);
    this.reasoningEffort = reasoningEffort;
    this.date = date;
  }

  /** The specs on the leading system message; the blocks are written where harmony puts them. */
  override declareTools(messages: Message[], tools: readonly ToolSpec[]): Message[] {
    return toolsOnSystem(messages, tools);
  }

  /** The harmony messages of a reply: analysis, commentary/final text, tool calls. */
  parseResponse(tokens: number[]): ParsedResponse {
    const stops = this.stopTokenIds;
    const count = tokens.filter((t) => stops.includes(t)).length;
    const { text, stopped } = this.responseText(tokens);
    const message: Message = { role: "assistant", content: "" };
    if (!stopped) return { message: { ...message, content: text }, ok: false };
    const thinking: string[] = [];
    const calls: ToolCall[] = [];
    let error: string | undefined;
    if (count > 1) error = "more than one <|return|>/<|call|> in a reply (wrong stop tokens?)";
    let idx = 0;
    let unparsed = 0;
    for (;;) {
      const at = text.indexOf("<|message|>", idx);
      if (at < 0) break;
      const start = text.lastIndexOf("<|start|>", at);
      const header = text.slice(start >= idx ? start : idx, at);
      const from = at + "<|message|>".length;
      let end = text.length;
      let endToken = "";
      for (const e of ENDS) {
        const k = text.indexOf(e, from);
        if (k >= 0 && k < end) [end, endToken] = [k, e];
      }
      const body = text.slice(from, end);
      idx = end + endToken.length;
      const recipient = /to=([^\s<]+)/.exec(header)?.[1];
      if (!body.trim()) continue;
      if (recipient?.startsWith("functions.")) {
        try {
          calls.push({ name: recipient.slice("functions.".length), arguments: JSON.parse(body) });
        } catch (e) {
          unparsed++;
          error ??= `malformed tool call ${JSON.stringify(body)}: ${(e as Error).message}`;
        }
        continue;
      }
      const channel = /<\|channel\|>([^<\s]+)/.exec(header)?.[1];
      if (channel === "analysis") thinking.push(body);
      else if (channel === "final" || channel === "commentary") message.content += body;
    }
    const intents = text.split("to=functions.").length - 1;
    if (intents > calls.length + unparsed) {
      error ??= "a to=functions. header without a parsable arguments message";
    }
    if (thinking.length) message.thinking = thinking.join("");
    if (calls.length && !error) message.toolCalls = calls;
    if (!thinking.length && !message.content && !calls.length && !error) message.content = text;
    return error ? { message, ok: true, error } : { message, ok: true };
  }

  /** The conversation as pieces (text or tokens, each with its loss weight), by this format's rules. */
  protected pieces(messages: Message[], addGenerationPrompt: boolean, trainOn: TrainOn): Piece[] {
    const out: Piece[] = [];
    const put = (text: string, train = false) => out.push({ text, train });
    if (this.reasoningEffort) {
      put(
        "<|start|>system<|message|>" +
          SYSTEM.replace("{date}", this.date).replace("{effort}", this.reasoningEffort) +
          "<|end|>",
      );
    }
    const pending: ToolCall[] = [];
    const n = messages.length;
    messages.forEach((m, i) => {
      if (m.role === "system") {
        const tools = i === 0 ? m.tools ?? [] : [];
        if (tools.length) {
          put(`<|start|>system<|message|>${ROUTING}<|end|>`);
          const parts = [
            ...(m.content ? [`# Instructions\n\n${m.content}`] : []),
            "# Tools\n\n## functions\n\nnamespace functions {\n\n" +
            tools.map(harmonyToolDefinition).join("\n\n") + "\n\n} // namespace functions",
          ];
          put(`<|start|>developer<|message|>${parts.join("\n\n")}<|end|>`);
        } else put(`<|start|>developer<|message|># Instructions\n\n${m.content}\n\n<|end|>`);
      } else if (m.role === "user") put(`<|start|>user<|message|>${m.content}<|end|>`);
      else if (m.role === "tool") {
        const k = m.toolCallId ? pending.findIndex((c) => c.id === m.toolCallId) : 0;
        const call = pending.splice(Math.max(k, 0), 1)[0];
        if (!call) throw new Error("gpt-oss: a tool result must answer an assistant's tool call");
        put(`<|start|>functions.${call.name} to=assistant`);
        put(`<|channel|>commentary<|message|>${m.content}<|end|>`);
      } else {
        put("<|start|>assistant");
        let body = m.thinking
          ? `<|channel|>analysis<|message|>${m.thinking}<|end|><|start|>assistant`
          : "";
        const calls = m.toolCalls ?? [];
        if (calls.length) {
          if (m.content) {
            body += `<|channel|>commentary<|message|>${m.content}<|end|><|start|>assistant`;
          }
          body += calls.map((c) => {
            const args = typeof c.arguments === "string"
              ? c.arguments
              : pyJson(argumentsObject(c.arguments));
            return ` to=functions.${c.name}<|channel|>commentary <|constrain|>json<|message|>${args}<|call|>`;
          }).join("<|start|>assistant");
          pending.push(...calls);
        } else {
          body += `<|channel|>final<|message|>${m.content}${
            i === n - 1 ? "<|return|>" : "<|end|>"
          }`;
        }
        put(body, trainedTurn(messages, i, trainOn));
      }
    });
    if (addGenerationPrompt) put("<|start|>assistant");
    return out;
  }
}
