/**
 * The ChatML chat format of the local byte-level models (`<|im_start|>role\n…<|im_end|>\n`),
 * the same shape Qwen uses. A renderer builds generation prompts as token ids and parses the
 * sampled tokens back into a message, so rollouts stay token-in/token-out.
 *
 * @module
 */

import { ByteTokenizer } from "../tokenizers/byte.ts";

/** A chat message. */
export interface Message {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
}

/** A parsed assistant response: `ok` is false when it was cut off before `<|im_end|>`. */
export interface ParsedResponse {
  message: Message;
  ok: boolean;
}

/**
 * ChatML over the byte tokenizer.
 *
 * @example
 * const r = new ChatMLRenderer();
 * const prompt = r.generationPrompt([{ role: "user", content: "hi" }]);
 * // sample with stop tokens r.stopTokens(), then r.parseResponse(sampledTokens)
 */
export class ChatMLRenderer {
  readonly tokenizer = new ByteTokenizer();

  /** Tokens of finished messages. */
  renderMessages(messages: Message[]): number[] {
    return messages.flatMap((m) =>
      this.tokenizer.encode(`<|im_start|>${m.role}\n${m.content}<|im_end|>\n`)
    );
  }

  /** Tokens of the messages followed by the opening of the assistant's turn. */
  generationPrompt(messages: Message[]): number[] {
    return [...this.renderMessages(messages), ...this.tokenizer.encode("<|im_start|>assistant\n")];
  }

  /**
   * Tokens that extend a sampled conversation with new messages: the newline after the
   * assistant's `<|im_end|>`, the messages, and the next assistant opening. Appending these to
   * prompt + sampled tokens keeps every turn's prompt a prefix of the next one.
   */
  continuation(messages: Message[]): number[] {
    return [...this.tokenizer.encode("\n"), ...this.generationPrompt(messages)];
  }

  /** Sampling stops at the end of the assistant's message. */
  stopTokens(): number[] {
    return [this.tokenizer.eosTokenId];
  }

  /** The assistant message in sampled tokens (up to `<|im_end|>`, which marks it complete). */
  parseResponse(tokens: number[]): ParsedResponse {
    const end = tokens.indexOf(this.tokenizer.eosTokenId);
    const body = end >= 0 ? tokens.slice(0, end) : tokens;
    return { message: { role: "assistant", content: this.tokenizer.decode(body) }, ok: end >= 0 };
  }
}
