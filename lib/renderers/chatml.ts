/**
 * The ChatML chat format of the local byte-level models (`<|im_start|>role\n…<|im_end|>\n`),
 * the same shape Qwen uses. A renderer builds generation prompts as token ids and parses the
 * sampled tokens back into a message, so rollouts stay token-in/token-out.
 *
 * Assistant turns may carry reasoning and tool calls, written as Qwen writes them:
 * `<think>\n{thinking}\n</think>\n\n{content}` and `\n<tool_call>\n{json}\n</tool_call>`; tool
 * results too: consecutive `tool` messages are one `user` turn of
 * `<tool_response>\n{content}\n</tool_response>` blocks, as Qwen3's template writes them, so a
 * conversation an OpenAI client sends to the proxy reads the same on a local model. Unlike
 * Qwen3's template, nothing is dropped from earlier turns and no empty think block is added,
 * so a conversation's tokens only ever grow (see {@link ChatMLRenderer.continuation}).
 *
 * @module
 */

import { ByteTokenizer } from "../tokenizers/byte.ts";
import type { Tokenizer } from "../tokenizers/types.ts";
import { formatToolCalls, parseAssistantText } from "./parse.ts";
import { refuseImages } from "./pieces.ts";
import { qwen3DeclareTools } from "./tools.ts";
import type {
  InputChunk,
  Message,
  ParsedResponse,
  Renderer,
  SupervisedExample,
  ToolSpec,
  TrainOn,
} from "./types.ts";

export type { Message, ParsedResponse } from "./types.ts";

/**
 * ChatML over a local model's tokenizer (the byte tokenizer unless given another, e.g. the games
 * tokenizer of `local/games2`; it must have `<|im_start|>` and `<|im_end|>` as special tokens).
 *
 * @example
 * const r = new ChatMLRenderer();
 * const prompt = r.generationPrompt([{ role: "user", content: "hi" }]);
 * // sample with stop tokens r.stopTokens(), then r.parseResponse(sampledTokens)
 */
export class ChatMLRenderer<T extends Tokenizer = ByteTokenizer> implements Renderer {
  readonly tokenizer: T;

  /** ChatML over `tokenizer` (default: the byte tokenizer). */
  constructor(tokenizer?: T) {
    this.tokenizer = tokenizer ?? (new ByteTokenizer() as Tokenizer as T);
  }

  /** Text of one message's body (what follows `<|im_start|>role\n`, up to `<|im_end|>`). */
  #body(m: Message): string {
    if (m.role !== "assistant") return m.content;
    const think = m.thinking ? `<think>\n${m.thinking}\n</think>\n\n` : "";
    return think + m.content + formatToolCalls(m.content, m.toolCalls ?? []);
  }

  /** Tokens of finished messages. */
  renderMessages(messages: Message[]): number[] {
    return chatTurns(messages).flatMap((m) =>
      this.tokenizer.encode(`<|im_start|>${m.role}\n${this.#body(m)}<|im_end|>\n`)
    );
  }

  /** Tokens of the messages followed by the opening of the assistant's turn. */
  generationPrompt(messages: Message[]): number[] {
    refuseImages(messages, "ChatML");
    return [...this.renderMessages(messages), ...this.tokenizer.encode("<|im_start|>assistant\n")];
  }

  /** Same as {@link generationPrompt} (the {@link Renderer} name). */
  buildGenerationPrompt(messages: Message[]): number[] {
    return this.generationPrompt(messages);
  }

  /** The generation prompt as one text chunk (ChatML here takes no images). */
  buildGenerationInput(messages: Message[]): InputChunk[] {
    return [{ type: "encoded_text", tokens: this.generationPrompt(messages) }];
  }

  /**
   * Tokens of a conversation with weight 1 on the trained assistant turns' bodies and their
   * `<|im_end|>`; the final newline after the last message is left out.
   */
  buildSupervisedExample(
    messages: Message[],
    { trainOn = "last_assistant" }: { trainOn?: TrainOn } = {},
  ): SupervisedExample {
    refuseImages(messages, "ChatML");
    const lastAssistant = chatTurns(messages).findLastIndex((m) => m.role === "assistant");
    const tokens: number[] = [];
    const weights: number[] = [];
    const put = (text: string, w: number) => {
      const ids = this.tokenizer.encode(text);
      tokens.push(...ids);
      weights.push(...ids.map(() => w));
    };
    chatTurns(messages).forEach((m, i) => {
      const train = m.role === "assistant" &&
        (trainOn === "all_assistant" || i === lastAssistant);
      if (i > 0) put("\n", 0);
      put(`<|im_start|>${m.role}\n`, 0);
      put(`${this.#body(m)}<|im_end|>`, train ? 1 : 0);
    });
    return { tokens, weights };
  }

  /**
   * Tokens that extend a sampled conversation with new messages: the newline after the
   * assistant's `<|im_end|>`, the messages, and the next assistant opening. Appending these to
   * prompt + sampled tokens keeps every turn's prompt a prefix of the next one.
   */
  continuation(messages: Message[]): number[] {
    return [...this.tokenizer.encode("\n"), ...this.generationPrompt(messages)];
  }

  /** The messages with the tools declared as Qwen3 declares them (the local models' format). */
  declareTools(messages: Message[], tools: readonly ToolSpec[]): Message[] {
    return qwen3DeclareTools(messages, tools);
  }

  /** Sampling stops at the end of the assistant's message. */
  stopTokens(): number[] {
    return [this.tokenizer.eosTokenId];
  }

  /** Same as {@link stopTokens} (the {@link Renderer} name). */
  stopSequences(): number[] {
    return this.stopTokens();
  }

  /**
   * The assistant message in sampled tokens (up to `<|im_end|>`, which marks it complete), with
   * its `<think>` block and `<tool_call>` blocks parsed out.
   */
  parseResponse(tokens: number[]): ParsedResponse {
    const end = tokens.indexOf(this.tokenizer.eosTokenId);
    const body = end >= 0 ? tokens.slice(0, end) : tokens;
    return parseAssistantText(this.tokenizer.decode(body), end >= 0);
  }
}

/**
 * The turns ChatML writes: messages as they are, except that consecutive tool results become
 * one user turn of `<tool_response>` blocks (Qwen3's convention).
 */
export function chatTurns(messages: Message[]): Message[] {
  const out: Message[] = [];
  messages.forEach((m, i) => {
    if (m.role !== "tool") return out.push(m);
    const block = `<tool_response>\n${m.content}\n</tool_response>`;
    if (i > 0 && messages[i - 1].role === "tool") out[out.length - 1].content += `\n${block}`;
    else out.push({ role: "user", content: block });
  });
  return out;
}
