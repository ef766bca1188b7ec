/**
 * The DeepSeek V3.1 renderers of tinker-cookbook (`deepseekv3`, thinking off, and
 * `deepseekv3_thinking`), rendering what the cookbook's do: the BOS token, the system prompt
 * unmarked (only at the start), `<｜User｜>` turns, `<｜Assistant｜>` turns closed by `</think>`
 * where the cookbook closes them, tool calls as
 * `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>name<｜tool▁sep｜>{json}<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`,
 * tool results as `<｜tool▁output▁begin｜>…<｜tool▁output▁end｜>`, after which the model
 * continues with no assistant marker. Declared tools go in the system prompt as the cookbook's
 * "## Tools" section.
 *
 * Where the cookbook parts from the model's jinja template, this follows the cookbook: with
 * thinking on, a turn with tool calls keeps its reasoning in history, and the last turn keeps
 * its own (a supervised example trains `reasoning</think>answer`); an empty tool-call turn
 * has no end token.
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

/**
 * A call's arguments as the text the format writes: as given when already text (the
 * cookbook's calls carry theirs so), else as Python's `json.dumps` writes them (how the
 * cookbook's tool code makes that text).
 */
function argsText(c: ToolCall): string {
  return typeof c.arguments === "string" ? c.arguments : pyJsonAscii(c.arguments);
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
  /** Whether the assistant turn opens with `<think>`. */
  readonly thinking: boolean;

  /** A DeepSeek V3 renderer over `tokenizer`. */
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
    // The cookbook strips the content around the calls it cut out.
    const before = text.slice(0, begin);
    message.content = thinking ? before.trimEnd() : before.trim();
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

  /**
   * The cookbook's rendering, message by message: a system message only at the start, with no
   * marker; an assistant turn after a tool result has no header; otherwise the header is
   * `<｜Assistant｜>`, closed by `</think>` for every turn but the last with thinking on and for
   * every turn with it off. With thinking on, reasoning stays on a turn with tool calls and on
   * the last one (a last turn without reasoning gets an empty `<think></think>`); with it off,
   * reasoning is dropped but after a tool result. The end token follows a turn with content
   * (an empty tool-call turn has none, as in the cookbook).
   */
  protected pieces(messages: Message[], addGenerationPrompt: boolean, trainOn: TrainOn): Piece[] {
    const out: Piece[] = [];
    const put = (text: string, train = false) => out.push({ text, train });
    put(BOS);
    const firstTrained = messages.findIndex((_, k) => trainedTurn(messages, k, trainOn));
    messages.forEach((m, i) => {
      const followsTool = messages[i - 1]?.role === "tool";
      const isLast = i === messages.length - 1;
      if (m.role === "system") {
        if (i > 0) throw new Error("deepseekv3 takes a system message only at the start");
        put(m.content);
      } else if (m.role === "user") put("<｜User｜>" + m.content);
      else if (m.role === "tool") {
        put("<｜tool▁output▁begin｜>" + m.content + "<｜tool▁output▁end｜>");
      } else {
        const calls = m.toolCalls ?? [];
        const dropped = this.thinking
          ? !calls.length && !isLast
          : !followsTool || (!calls.length && !isLast);
        const reasoning = m.thinking && !dropped ? `<think>${m.thinking}</think>` : "";
        let body = reasoning + m.content;
        if (calls.length) {
          body += CALLS_BEGIN +
            calls.map((c) => CALL_BEGIN + c.name + SEP + argsText(c) + CALL_END).join("") +
            CALLS_END;
        }
        if (this.thinking && !followsTool && isLast && m.content && !m.thinking) {
          body = "<think></think>" + body;
        }
        // The cookbook's message content is a list when it has reasoning (non-empty), and
        // with thinking off the list is first cut to its text, but after a tool result.
        if (m.content || (m.thinking && (this.thinking || followsTool))) body += EOS;
        if (!followsTool) {
          put("<｜Assistant｜>" + (this.thinking && isLast ? "" : "</think>"));
        }
        // The first trained turn's opening <think> is the generation prompt's: given, so not
        // trained (the cookbook's `_train_after_the_generation_prompt`).
        const given = this.thinking && !followsTool && isLast && i === firstTrained &&
            body.startsWith("<think>")
          ? "<think>"
          : "";
        if (given) put(given);
        put(body.slice(given.length), trainedTurn(messages, i, trainOn));
      }
    });
    if (addGenerationPrompt && messages.at(-1)?.role !== "tool") {
      put("<｜Assistant｜>" + (this.thinking ? "<think>" : "</think>"));
    }
    return out;
  }
}
