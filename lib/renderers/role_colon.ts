/**
 * The role-colon renderer of base models, which have no chat template: each message is
 * `Role: content` followed by a blank line, the assistant's turn ends with the tokenizer's
 * end-of-text token (what sampling stops on, and what supervised examples teach), and the
 * generation prompt is `Assistant:` (the model writes the space). Tool results are `Tool:`
 * turns; tool declarations use Qwen3's text section (`declareTools`), the format base models have
 * seen most. Design after tinker-cookbook's `role_colon` renderer, with a stop token in place
 * of its `\n\nUser:` string.
 *
 * @module
 */

import type { Tokenizer } from "../tokenizers/types.ts";
import { parseAssistantText } from "./parse.ts";
import { PieceRenderer } from "./piece_renderer.ts";
import { type Piece, trainedTurn } from "./pieces.ts";
import type { Message, ParsedResponse, TrainOn } from "./types.ts";

/** End-of-text tokens of the base models' vocabularies (Qwen, Llama 3, DeepSeek). */
const END_OF_TEXT = ["<|endoftext|>", "<|end_of_text|>", "<｜end▁of▁sentence｜>"];

const ROLE: Record<Message["role"], string> = {
  system: "System",
  user: "User",
  assistant: "Assistant",
  tool: "Tool",
};

/**
 * Role-colon format over any tokenizer.
 *
 * @example
 * const r = new RoleColonRenderer(getTokenizer("Qwen/Qwen3-8B-Base"));
 * r.buildGenerationPrompt([{ role: "user", content: "2+2?" }]); // "User: 2+2?\n\nAssistant:"
 */
export class RoleColonRenderer extends PieceRenderer {
  readonly #endText: string;

  constructor(tokenizer: Tokenizer) {
    const name = END_OF_TEXT.find((t) => tokenizer.specialTokens.has(t));
    const end = name ? tokenizer.specialTokens.get(name)! : tokenizer.eosTokenId;
    // The blank line after the final turn is not part of what the model produced.
    super(tokenizer, [end], "\n\n");
    this.#endText = tokenizer.decode([end]);
  }

  /** The assistant message (the leading space the prompt leaves to the model is dropped). */
  parseResponse(tokens: number[]): ParsedResponse {
    const { text, stopped } = this.responseText(tokens);
    return parseAssistantText(text.replace(/^ /, ""), stopped);
  }

  protected pieces(messages: Message[], addGenerationPrompt: boolean, trainOn: TrainOn): Piece[] {
    const out: Piece[] = [];
    messages.forEach((m, i) => {
      if (m.role === "assistant") {
        out.push({ text: "Assistant:", train: false });
        const calls = (m.toolCalls ?? []).map((c) =>
          `\n<tool_call>\n${JSON.stringify({ name: c.name, arguments: c.arguments })}\n</tool_call>`
        ).join("");
        out.push({
          text: ` ${m.content}${calls}${this.#endText}`,
          train: trainedTurn(messages, i, trainOn),
        });
        out.push({ text: "\n\n", train: false });
      } else out.push({ text: `${ROLE[m.role]}: ${m.content}\n\n`, train: false });
    });
    if (addGenerationPrompt) out.push({ text: "Assistant:", train: false });
    return out;
  }
}
