/**
 * The role-colon renderer of base models, which have no chat template: each message is
 * `Role: content` followed by a blank line, the assistant's turn ends with the tokenizer's
 * end-of-text token (what sampling stops on, and what supervised examples teach), and the
 * generation prompt is `Assistant:` (the model writes the space). Tool results are `Tool:`
 * turns; tool declarations use Qwen3's text section (`withTools`), the format base models have
 * seen most. Design after tinker-cookbook's `role_colon` renderer, with a stop token in place
 * of its `\n\nUser:` string.
 *
 * @module
 */

import type { Tokenizer } from "../tokenizers/types.ts";
import { parseAssistantText } from "./parse.ts";
import { encodePieces, type Piece, trainedTurn, untilStop } from "./pieces.ts";
import type { Message, ParsedResponse, Renderer, SupervisedExample, TrainOn } from "./types.ts";

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
export class RoleColonRenderer implements Renderer {
  readonly tokenizer: Tokenizer;
  readonly #end: number;
  readonly #endText: string;

  constructor(tokenizer: Tokenizer) {
    this.tokenizer = tokenizer;
    const end = END_OF_TEXT.find((t) => tokenizer.specialTokens.has(t));
    this.#end = end ? tokenizer.specialTokens.get(end)! : tokenizer.eosTokenId;
    this.#endText = tokenizer.decode([this.#end]);
  }

  /** The rendered text. */
  renderText(messages: Message[], addGenerationPrompt: boolean): string {
    return this.#pieces(messages, addGenerationPrompt, "last_assistant").map((p) => p.text)
      .join("");
  }

  buildGenerationPrompt(messages: Message[]): number[] {
    return this.tokenizer.encode(this.renderText(messages, true));
  }

  buildSupervisedExample(
    messages: Message[],
    { trainOn = "last_assistant" }: { trainOn?: TrainOn } = {},
  ): SupervisedExample {
    const pieces = this.#pieces(messages, false, trainOn);
    if (pieces.at(-1)?.text === "\n\n") pieces.pop();
    return encodePieces(this.tokenizer, pieces);
  }

  stopSequences(): number[] {
    return [this.#end];
  }

  /** The assistant message (the leading space the prompt leaves to the model is dropped). */
  parseResponse(tokens: number[]): ParsedResponse {
    const { body, stopped } = untilStop(tokens, [this.#end]);
    const { message, error } = parseAssistantText(
      this.tokenizer.decode(body).replace(/^ /, ""),
    );
    return error ? { message, ok: stopped, error } : { message, ok: stopped };
  }

  #pieces(messages: Message[], addGenerationPrompt: boolean, trainOn: TrainOn): Piece[] {
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
