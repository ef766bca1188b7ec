/**
 * The role-colon renderer of base models, which have no chat template, as tinker-cookbook's
 * `role_colon` renders it: each message is `Role:` then ` content` and a blank line; the
 * generation prompt ends with `Assistant:` (the model writes the space); sampling stops at the
 * text `\n\nUser:` (the model starting the next user turn), so a supervised example's last
 * assistant turn trains ` content\n\n` and the `User:` that completes that stop. A reply is
 * clean when it ends with that stop once, or (base models on single-turn prompts) with the
 * end-of-text token alone.
 *
 * Tool results are `Tool:` turns; tool declarations use Qwen3's text section (`declareTools`),
 * the format base models have seen most (the cookbook's `role_colon` declares none).
 *
 * @module
 */

import type { Tokenizer } from "../tokenizers/types.ts";
import { parseAssistantText } from "./parse.ts";
import { PieceRenderer } from "./piece_renderer.ts";
import { type Piece, trainedTurn } from "./pieces.ts";
import type { Message, ParsedResponse, TrainOn } from "./types.ts";

/** The text that ends an assistant's turn: the next user turn beginning. */
const STOP = "\n\nUser:";

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
  /** The `User:`/`Assistant:` format over `tokenizer`. */
  constructor(tokenizer: Tokenizer) {
    super(tokenizer, []);
  }

  /** Sampling stops at the text `\n\nUser:`. */
  override stopSequences(): string[] {
    return [STOP];
  }

  /**
   * The assistant message: the text before `\n\nUser:` without the leading space and the
   * trailing blank line. Clean with one `\n\nUser:`, or with the end-of-text token and none;
   * cut off (`ok` false) with neither; an error with both, or with two of them (the model
   * wrote the user's turn).
   */
  parseResponse(tokens: number[]): ParsedResponse {
    const eos = tokens.at(-1) === this.tokenizer.eosTokenId;
    const text = this.tokenizer.decode(eos ? tokens.slice(0, -1) : tokens);
    const parts = text.split(STOP);
    const content = parts[0].replace(/^ /, "").replace(/\n\n$/, "");
    const parsed = parseAssistantText(content, parts.length === 2 ? !eos : eos);
    if (parts.length > 2) {
      return {
        ...parsed,
        ok: true,
        error: `the reply has ${parts.length - 1} "\\n\\nUser:" stops`,
      };
    }
    if (parts.length === 2 && eos) {
      return { ...parsed, ok: true, error: 'the reply goes on past "\\n\\nUser:" to end-of-text' };
    }
    return parsed;
  }

  /** The conversation as pieces (text or tokens, each with its loss weight), by this format's rules. */
  protected pieces(messages: Message[], addGenerationPrompt: boolean, trainOn: TrainOn): Piece[] {
    const out: Piece[] = [];
    messages.forEach((m, i) => {
      const calls = (m.toolCalls ?? []).map((c) =>
        `\n<tool_call>\n${JSON.stringify({ name: c.name, arguments: c.arguments })}\n</tool_call>`
      ).join("");
      const train = trainedTurn(messages, i, trainOn);
      out.push({ text: `${ROLE[m.role]}:`, train: false });
      out.push({ text: ` ${m.content}${calls}\n\n`, train });
      // The last message's `User:` completes the stop its turn ended with.
      if (m.role === "assistant" && i === messages.length - 1 && !addGenerationPrompt) {
        out.push({ text: "User:", train });
      }
    });
    if (addGenerationPrompt) out.push({ text: "Assistant:", train: false });
    return out;
  }
}
