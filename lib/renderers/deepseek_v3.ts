/**
 * The DeepSeek V3.1 chat renderer, thinking on or off (the template's `thinking`). It writes what
 * the model's jinja template writes: the system messages joined at the start after the BOS
 * token; `<｜User｜>` turns; an assistant turn after a user turn opened by `<｜Assistant｜>` and
 * `</think>` (thinking off, and for every earlier turn) or `<think>` (the generation prompt with
 * thinking on); earlier reasoning dropped; tool calls as
 * `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>name<｜tool▁sep｜>{json}<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`;
 * tool results as `<｜tool▁output▁begin｜>…<｜tool▁output▁end｜>`, after which the model
 * continues with no assistant marker. Declared tools go in the system prompt as the cookbook's
 * "## Tools" section (the template of llama.cpp's copy writes none).
 *
 * With thinking on, a supervised example keeps the last turn's reasoning
 * (`<think>` in the prompt, then `reasoning</think>answer`): the template cannot render a turn's
 * reasoning at all, so here the datum follows what the model produced rather than the template.
 *
 * @module
 */

import { specialTokenId, type Tokenizer } from "../tokenizers/types.ts";
import { leadingThinking, malformedCall, pyJsonAscii } from "./parse.ts";
import { PieceRenderer } from "./piece_renderer.ts";
import { type Piece, trainedTurn } from "./pieces.ts";
import { toolsInSystemText } from "./tools.ts";
import type { Message, ParsedResponse, ToolCall, ToolSpec, TrainOn } from "./types.ts";

const BOS = "<｜begin▁of▁sentence｜>";
const EOS = "<｜end▁of▁sentence｜>";
const CALLS_BEGIN = "<｜tool▁calls▁begin｜>";
const CALLS_END = "<｜tool▁calls▁end｜>";
const CALL_BEGIN = "<｜tool▁call▁begin｜>";
const CALL_END = "<｜tool▁call▁end｜>";
const SEP = "<｜tool▁sep｜>";
const CALL = /<｜tool▁call▁begin｜>(.*?)<｜tool▁sep｜>(.*?)<｜tool▁call▁end｜>/gs;

/**
 * The tool section the cookbook's `create_conversation_prefix_with_tools` appends to the system
 * prompt (after the model card's, without its `{{additional_tool_calls}}` placeholder).
 */
export function deepseekToolsSection(tools: readonly ToolSpec[]): string {
  return "\n\n## Tools\nYou have access to the following tools:\n\n" +
    tools.map((t) =>
      `### ${t.name}\nDescription: ${t.description}\n\nParameters: ${pyJsonAscii(t.parameters)}`
    ).join("\n") +
    "\n\nIMPORTANT: ALWAYS adhere to this exact format for tool use:\n" +
    `${CALLS_BEGIN}${CALL_BEGIN}tool_call_name${SEP}tool_call_arguments${CALL_END}${CALLS_END}` +
    "\n\nWhere:\n" +
    "- `tool_call_name` must be an exact match to one of the available tools\n" +
    "- `tool_call_arguments` must be valid JSON that strictly follows the tool's Parameters Schema\n" +
    "- For multiple tool calls, chain them directly without separators or spaces";
}

/** A call's arguments as the JSON text the format writes (as given when already text). */
function argsText(c: ToolCall): string {
  return typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments);
}

/** Options of {@link DeepSeekV3Renderer}. */
export interface DeepSeekV3Options {
  /** The template's `thinking` (default false: the prompt closes the think block). */
  thinking?: boolean;
}

/**
 * DeepSeek V3.1 chat format.
 *
 * @example
 * const r = new DeepSeekV3Renderer(getTokenizer("deepseek-ai/DeepSeek-V3.1"), { thinking: true });
 */
export class DeepSeekV3Renderer extends PieceRenderer {
  readonly thinking: boolean;

  constructor(tokenizer: Tokenizer, { thinking = false }: DeepSeekV3Options = {}) {
    super(tokenizer, [specialTokenId(tokenizer, EOS)]);
    this.thinking = thinking;
  }

  /** The cookbook's tool section after the system prompt (the system message is its text). */
  override declareTools(messages: Message[], tools: readonly ToolSpec[]): Message[] {
    return toolsInSystemText(messages, tools, (t, system) => system + deepseekToolsSection(t));
  }

  /** The assistant message: reasoning up to `</think>` (thinking on), content, tool calls. */
  parseResponse(tokens: number[]): ParsedResponse {
    const { text: sampled, stopped } = this.responseText(tokens);
    const { thinking, rest: text } = leadingThinking(sampled);
    const message: Message = { role: "assistant", content: text };
    if (thinking) message.thinking = thinking;
    const begin = text.indexOf(CALLS_BEGIN);
    if (begin < 0) {
      message.content = text;
      return { message, ok: stopped };
    }
    message.content = text.slice(0, begin);
    const calls: ToolCall[] = [];
    for (const m of text.slice(begin).matchAll(CALL)) {
      try {
        calls.push({ name: m[1], arguments: JSON.parse(m[2]) });
      } catch (e) {
        return { message, ok: stopped, error: malformedCall(m[2], e) };
      }
    }
    if (!text.includes(CALLS_END)) {
      return { message, ok: stopped, error: "unterminated tool calls" };
    }
    if (calls.length) message.toolCalls = calls;
    return { message, ok: stopped };
  }

  protected pieces(messages: Message[], addGenerationPrompt: boolean, trainOn: TrainOn): Piece[] {
    const out: Piece[] = [];
    const put = (text: string, train = false) => out.push({ text, train });
    const systems = messages.filter((m) => m.role === "system");
    const system = systems.map((m) => m.content).join("\n\n");
    put(BOS + system);
    let lastUser = false;
    let inTool = false;
    const lastAssistant = messages.findLastIndex((m) => m.role === "assistant");
    messages.forEach((m, i) => {
      const train = trainedTurn(messages, i, trainOn);
      if (m.role === "user") {
        inTool = false;
        lastUser = true;
        put("<｜User｜>" + m.content);
      } else if (m.role === "assistant" && m.toolCalls?.length) {
        if (lastUser) put("<｜Assistant｜></think>");
        lastUser = inTool = false;
        const calls = m.toolCalls.map((c) => CALL_BEGIN + c.name + SEP + argsText(c) + CALL_END);
        put(m.content + CALLS_BEGIN + calls.join("") + CALLS_END + EOS, train);
      } else if (m.role === "assistant") {
        // With thinking on, the produced (final) turn keeps its reasoning (the module's note).
        const reasoning = this.thinking && !addGenerationPrompt && i === lastAssistant &&
          i === messages.length - 1;
        if (lastUser) put("<｜Assistant｜>" + (reasoning ? "<think>" : "</think>"));
        lastUser = false;
        let content = m.content;
        if (inTool) inTool = false;
        else if (content.includes("</think>")) {
          content = content.slice(content.indexOf("</think>") + "</think>".length);
        }
        put((reasoning ? `${m.thinking ?? ""}</think>` : "") + content + EOS, train);
      } else if (m.role === "tool") {
        lastUser = false;
        inTool = true;
        put("<｜tool▁output▁begin｜>" + m.content + "<｜tool▁output▁end｜>");
      }
    });
    if (addGenerationPrompt && lastUser && !inTool) {
      put("<｜Assistant｜>" + (this.thinking ? "<think>" : "</think>"));
    }
    return out;
  }
}
