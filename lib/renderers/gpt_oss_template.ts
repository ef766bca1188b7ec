/**
 * The gpt-oss chat renderer of the model's own jinja template (OpenAI's harmony format), under the
 * names `gpt_oss_template_*` (tinker-cookbook's `gpt_oss_*` renderers differ: `gpt_oss.ts`):
 * a system message (model identity, knowledge cutoff, the current date, `Reasoning: <effort>`,
 * the valid channels); a developer message holding the caller's system prompt as
 * `# Instructions` and declared tools as a TypeScript-like `namespace functions`; user turns;
 * assistant turns on the `final` channel, their reasoning on the `analysis` channel only for
 * the trained last turn (earlier reasoning is dropped, so multi-turn datums re-render); a tool
 * call as `<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{args}<|call|>`
 * (one per turn, the template's limit) with its reasoning kept until a final answer follows;
 * tool results as `functions.NAME to=assistant` turns with JSON-encoded content. Sampling stops
 * at `<|return|>` (a final answer) or `<|call|>` (a tool call).
 *
 * @module
 */

import { specialTokenId, type Tokenizer } from "../tokenizers/types.ts";
import type { ReasoningEffort } from "./gpt_oss.ts";
import { argumentsObject, malformedCall, pyJson } from "./parse.ts";
import { PieceRenderer } from "./piece_renderer.ts";
import { type Piece, trainedTurn } from "./pieces.ts";
import { toolsOnSystem } from "./tools.ts";
import type { Message, ParsedResponse, ToolCall, ToolSpec, TrainOn } from "./types.ts";

/** Options of {@link GptOssTemplateRenderer}. */
export interface GptOssTemplateOptions {
  /** Reasoning effort (default "medium", the template's default). */
  reasoningEffort?: ReasoningEffort;
  /** The system message's "Current date" (default: today, UTC, as the template's `strftime_now`). */
  date?: string;
}

type Schema = Record<string, unknown>;

/** A JSON Schema type as the template writes it in TypeScript-like syntax. */
function tsType(spec: Schema): string {
  const type = spec.type;
  const nullable = spec.nullable ? " | null" : "";
  if (type === "array") {
    const items = spec.items as Schema | undefined;
    if (!items) return "any[]" + nullable;
    const simple: Record<string, string> = {
      string: "string[]",
      number: "number[]",
      integer: "number[]",
      boolean: "boolean[]",
    };
    const inner = simple[items.type as string];
    if (inner) return inner + nullable;
    const t = tsType(items);
    return (t === "object | object" || t.length > 50 ? "any[]" : t + "[]") + nullable;
  }
  if (Array.isArray(type) && type.length) return type.length > 1 ? type.join(" | ") : type[0];
  if (Array.isArray(spec.oneOf)) return "any";
  if (type === "string") {
    if (Array.isArray(spec.enum) && spec.enum.length) return `"${spec.enum.join('" | "')}"`;
    return "string" + nullable;
  }
  if (type === "number" || type === "integer") return "number";
  if (type === "boolean") return "boolean";
  if (type === "object") {
    const props = spec.properties as Record<string, Schema> | undefined;
    if (!props || !Object.keys(props).length) return "object";
    const required = (spec.required as string[] | undefined) ?? [];
    // The template writes each nested property's type after a newline and its own indentation.
    const fields = Object.entries(props).map(([name, p]) =>
      `${name}${required.includes(name) ? "" : "?"}: \n                ${tsType(p)}`
    );
    return `{\n${fields.join(", ")}}`;
  }
  return "any";
}

/** Declared tools as the template's `namespace functions`. */
export function harmonyToolsNamespace(tools: readonly ToolSpec[]): string {
  const defs = tools.map((t) => {
    const props = (t.parameters.properties ?? {}) as Record<string, Schema>;
    const required = (t.parameters.required as string[] | undefined) ?? [];
    let sig = "() => any;\n\n";
    if (Object.keys(props).length) {
      const params = Object.entries(props).map(([name, p]) => {
        let line = (p.description ? `// ${p.description}\n` : "") + name +
          (required.includes(name) ? "" : "?") + ": " + tsType(p);
        if (p.default !== undefined) {
          line += p.enum || p.oneOf
            ? `${p.enum ? ", " : ""}// default: ${p.default}`
            : `, // default: ${pyJson(p.default)}`;
        }
        return line + ",\n";
      });
      sig = "(_: {\n" + params.join("") + "}) => any;\n\n";
    }
    return `// ${t.description}\ntype ${t.name} = ${sig}`;
  });
  return "## functions\n\nnamespace functions {\n\n" + defs.join("") + "} // namespace functions";
}

const HEADER = /^(?: to=functions\.([^<\s]+))?<\|channel\|>(\w+)(?: (?:<\|constrain\|>)?\w+)?$/;

/**
 * gpt-oss (harmony) chat format.
 *
 * @example
 * const r = new GptOssTemplateRenderer(getTokenizer("openai/gpt-oss-20b"), { reasoningEffort: "high" });
 */
export class GptOssTemplateRenderer extends PieceRenderer {
  /** The system message's reasoning effort. */
  readonly reasoningEffort: ReasoningEffort;
  /** The date the system message gives. */
  readonly date: string;

  /** The gpt-oss chat template's format over `tokenizer`. */
  constructor(
    tokenizer: Tokenizer,
    { reasoningEffort = "medium", date = new Date().toISOString().slice(0, 10) }:
      GptOssTemplateOptions = {},
  ) {
    super(tokenizer, [
      specialTokenId(tokenizer, "<|return|>"),
      specialTokenId(tokenizer, "<|call|>"),
    ]);
    this.reasoningEffort = reasoningEffort;
    this.date = date;
  }

  /** Declares the tools where gpt-oss's template writes them. */
  override declareTools(messages: Message[], tools: readonly ToolSpec[]): Message[] {
    return toolsOnSystem(messages, tools);
  }

  /** The assistant's messages after `<|start|>assistant`: analysis, final answer, tool call. */
  parseResponse(tokens: number[]): ParsedResponse {
    const { text, stopped } = this.responseText(tokens);
    const message: Message = { role: "assistant", content: "" };
    const thinking: string[] = [];
    const calls: ToolCall[] = [];
    for (const [k, part] of text.split("<|start|>assistant").entries()) {
      if (k > 0 && part === "") continue;
      const at = part.indexOf("<|message|>");
      const header = HEADER.exec(at >= 0 ? part.slice(0, at) : "");
      if (!header) {
        return {
          message: { ...message, content: text },
          ok: stopped,
          error: "malformed harmony header",
        };
      }
      const content = part.slice(at + "<|message|>".length).replace(/<\|end\|>$/, "");
      const [, fn, channel] = header;
      if (fn) {
        try {
          calls.push({ name: fn, arguments: JSON.parse(content) });
        } catch (e) {
          return { message, ok: stopped, error: malformedCall(content, e) };
        }
      } else if (channel === "analysis") thinking.push(content);
      else message.content += content;
    }
    if (thinking.length) message.thinking = thinking.join("\n");
    if (calls.length) message.toolCalls = calls;
    return { message, ok: stopped };
  }

  #system(tools: boolean): string {
    return "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n" +
      `Knowledge cutoff: 2024-06\nCurrent date: ${this.date}\n\n` +
      `Reasoning: ${this.reasoningEffort}\n\n` +
      "# Valid channels: analysis, commentary, final. Channel must be included for every message." +
      (tools ? "\nCalls to these tools must go to the commentary channel: 'functions'." : "") +
      "<|end|>";
  }

  /** The conversation as pieces (text or tokens, each with its loss weight), by this format's rules. */
  protected pieces(messages: Message[], addGenerationPrompt: boolean, trainOn: TrainOn): Piece[] {
    const out: Piece[] = [];
    const put = (text: string, train = false) => out.push({ text, train });
    const hasSystem = messages[0]?.role === "system";
    const developer = hasSystem ? messages[0].content : "";
    const tools = hasSystem ? messages[0].tools ?? [] : [];
    put(this.#system(tools.length > 0));
    if (developer || tools.length) {
      put(
        "<|start|>developer<|message|>" + (developer ? `# Instructions\n\n${developer}\n\n` : "") +
          (tools.length ? "# Tools\n\n" + harmonyToolsNamespace(tools) : "") + "<|end|>",
      );
    }
    let lastCall: string | undefined;
    const n = messages.length;
    messages.forEach((m, i) => {
      if (i === 0 && hasSystem) return;
      const train = trainedTurn(messages, i, trainOn);
      if (m.role === "assistant" && m.toolCalls?.length) {
        const finalLater = messages.slice(i + 1).some((f) =>
          f.role === "assistant" && !f.toolCalls?.length
        );
        if (m.content && m.thinking) {
          throw new Error("gpt-oss: a tool-calling turn has either content or thinking, not both");
        }
        const analysis = m.content || m.thinking;
        const call = m.toolCalls[0];
        put("<|start|>assistant");
        put(
          (analysis && !finalLater
            ? `<|channel|>analysis<|message|>${analysis}<|end|><|start|>assistant`
            : "") +
            ` to=functions.${call.name}<|channel|>commentary json<|message|>` +
            pyJson(argumentsObject(call.arguments)) + "<|call|>",
          train,
        );
        lastCall = call.name;
      } else if (m.role === "assistant" && i === n - 1 && !addGenerationPrompt) {
        put("<|start|>assistant");
        put(
          (m.thinking !== undefined
            ? `<|channel|>analysis<|message|>${m.thinking}<|end|><|start|>assistant`
            : "") + `<|channel|>final<|message|>${m.content}<|return|>`,
          train,
        );
      } else if (m.role === "assistant") {
        put("<|start|>assistant");
        // Earlier reasoning is dropped; a trained earlier turn ends with <|end|>, as rendered.
        put(`<|channel|>final<|message|>${m.content}<|end|>`, train);
        lastCall = undefined;
      } else if (m.role === "tool") {
        if (lastCall === undefined) {
          throw new Error("gpt-oss: a tool result must follow an assistant tool call");
        }
        put(
          `<|start|>functions.${lastCall} to=assistant<|channel|>commentary<|message|>` +
            `${JSON.stringify(m.content)}<|end|>`,
        );
      } else if (m.role === "user") put(`<|start|>user<|message|>${m.content}<|end|>`);
    });
    if (addGenerationPrompt) put("<|start|>assistant");
    return out;
  }
}
