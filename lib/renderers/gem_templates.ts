/**
 * GEM's prompt formats (`template` in GEM's training scripts, `TEMPLATE_FACTORY`): each turn is
 * one prompt built from the latest observation alone — wrapped in a Qwen-style user turn that
 * asks for the answer in `\boxed{}` (`qwen3_game`, `qwen3_general`), or the observation as it is
 * (`no`) — and the model's reply is the action, decoded whole. With `env_wrappers: concat` the
 * observation carries the episode's history, so every turn is a separate single-prompt
 * transition, as in GEM. The text is GEM's whatever the model (its seed renders Llama 3 with it
 * too); sampling stops at the tokenizer's end-of-message token.
 *
 * @module
 */

import type { Tokenizer } from "../tokenizers/types.ts";
import { refuseImages, untilStop } from "./pieces.ts";
import type {
  InputChunk,
  Message,
  ParsedResponse,
  Renderer,
  SupervisedExample,
  ToolSpec,
} from "./types.ts";

/** GEM's template names. */
export const GEM_TEMPLATE_NAMES = ["qwen3_game", "qwen3_general", "no"] as const;

/** One of GEM's template names. */
export type GemTemplateName = typeof GEM_TEMPLATE_NAMES[number];

const ASK =
  "\nPlease reason step by step, and put your final answer within \\boxed{}.<|im_end|>\n" +
  "<|im_start|>assistant\n";

/** GEM's templates: the prompt text of one observation. */
export const GEM_TEMPLATES: Readonly<Record<GemTemplateName, (observation: string) => string>> = {
  qwen3_game: (o) =>
    `<|im_start|>user\nYou are playing language games. Make valid actions to win.\nObservation: ${o}${ASK}`,
  qwen3_general: (o) => `<|im_start|>user\nQuestion: ${o}${ASK}`,
  no: (o) => o,
};

/**
 * A GEM template as a renderer: prompts from the last observation, replies as actions.
 *
 * @example
 * const r = new GemTemplateRenderer(getTokenizer("Qwen/Qwen3-4B-Instruct-2507"), "qwen3_game");
 * r.buildGenerationPrompt([{ role: "user", content: "Guess a number in 1..10." }]);
 */
export class GemTemplateRenderer implements Renderer {
  readonly tokenizer: Tokenizer;
  /** Which GEM template. */
  readonly template: GemTemplateName;

  /** GEM's `template` over `tokenizer`. */
  constructor(tokenizer: Tokenizer, template: GemTemplateName) {
    this.tokenizer = tokenizer;
    this.template = template;
  }

  /** The prompt text: the template around the last observation (user or tool message). */
  renderText(messages: Message[]): string {
    const last = messages.findLast((m) => m.role === "user" || m.role === "tool");
    return GEM_TEMPLATES[this.template](last?.content ?? "");
  }

  buildGenerationPrompt(messages: Message[]): number[] {
    refuseImages(messages, `GEM's ${this.template} template`);
    return this.tokenizer.encode(this.renderText(messages));
  }

  /** The prompt as one text chunk (GEM's templates take no images). */
  buildGenerationInput(messages: Message[]): InputChunk[] {
    return [{ type: "encoded_text", tokens: this.buildGenerationPrompt(messages) }];
  }

  /** The last assistant turn as one transition: its observation's prompt, then the reply. */
  buildSupervisedExample(messages: Message[]): SupervisedExample {
    const at = messages.findLastIndex((m) => m.role === "assistant");
    const prompt = this.buildGenerationPrompt(messages.slice(0, Math.max(at, 0)));
    if (at < 0) return { tokens: prompt, weights: prompt.map(() => 0) };
    const reply = [...this.tokenizer.encode(messages[at].content), this.tokenizer.eosTokenId];
    return {
      tokens: [...prompt, ...reply],
      weights: [...prompt.map(() => 0), ...reply.map(() => 1)],
    };
  }

  /**
   * The messages as they are: GEM's prompts are built from the last observation alone, so a
   * declaration has nowhere to go (GEM's tool environments describe their moves in it).
   */
  declareTools(messages: Message[], _tools: readonly ToolSpec[]): Message[] {
    return messages;
  }

  stopSequences(): number[] {
    return [this.tokenizer.eosTokenId];
  }

  /** The reply as the action: the decoded text, reasoning included, as GEM passes it. */
  parseResponse(tokens: number[]): ParsedResponse {
    const { body, stopped } = untilStop(tokens, [this.tokenizer.eosTokenId]);
    return { message: { role: "assistant", content: this.tokenizer.decode(body) }, ok: stopped };
  }
}
