/**
 * A tokenizer from a Hugging Face `tokenizer.json` + `tokenizer_config.json` (local files, no
 * network), with the model's jinja chat template. Encoding runs on `@huggingface/tokenizers`
 * (ids identical to transformers), the template on `@huggingface/jinja`.
 *
 * @module
 */

import { Tokenizer as HfCore } from "@huggingface/tokenizers";
import { Template } from "@huggingface/jinja";
import type { Tokenizer } from "./types.ts";

/** The fields of `tokenizer_config.json` this module reads (others pass through to the core). */
export interface HfTokenizerConfig {
  chat_template?: string;
  eos_token?: string | { content: string } | null;
  pad_token?: string | { content: string } | null;
  bos_token?: string | { content: string } | null;
  [key: string]: unknown;
}

/** Options of {@link HfTokenizer.applyChatTemplate}. */
export interface ChatTemplateOptions {
  /** Append the opening of the assistant's turn. */
  addGenerationPrompt?: boolean;
  /** Tool (function) specs, passed to the template as `tools`. */
  tools?: unknown[];
  /** Further template variables, e.g. `{ enable_thinking: false }` for Qwen3. */
  [variable: string]: unknown;
}

function tokenText(t: HfTokenizerConfig["eos_token"]): string | undefined {
  if (t === null || t === undefined) return undefined;
  return typeof t === "string" ? t : t.content;
}

/**
 * A Hugging Face tokenizer from parsed `tokenizer.json` and `tokenizer_config.json`.
 *
 * @example
 * const tok = HfTokenizer.fromFiles("Qwen/Qwen3-8B", "tokenizer.json", "tokenizer_config.json");
 * tok.encode("hello"); // ids, no BOS/EOS added
 * tok.applyChatTemplate([{ role: "user", content: "hi" }], { addGenerationPrompt: true });
 */
export class HfTokenizer implements Tokenizer {
  readonly id: string;
  readonly vocabSize: number;
  readonly eosTokenId: number;
  readonly padTokenId: number;
  /** All added tokens (`<|im_end|>`, and also non-special ones such as `<think>`). */
  readonly specialTokens: ReadonlyMap<string, number>;
  /** The jinja chat template from `tokenizer_config.json`, if it has one. */
  readonly chatTemplate: string | undefined;
  readonly #core: HfCore;
  readonly #config: HfTokenizerConfig;
  #template: Template | undefined;

  constructor(id: string, tokenizerJson: object, config: HfTokenizerConfig) {
    this.id = id;
    this.#config = config;
    this.#core = tokenizerJson instanceof HfCore
      ? tokenizerJson
      : new HfCore(tokenizerJson, config);
    this.vocabSize = this.#core.get_vocab(true).size;
    const special = new Map<string, number>();
    for (const [tokenId, added] of this.#core.get_added_tokens_decoder()) {
      special.set(added.content, tokenId);
    }
    this.specialTokens = special;
    this.chatTemplate = typeof config.chat_template === "string" ? config.chat_template : undefined;
    this.eosTokenId = this.#requiredId(tokenText(config.eos_token), "eos_token");
    const pad = tokenText(config.pad_token);
    this.padTokenId = pad === undefined ? this.eosTokenId : this.#requiredId(pad, "pad_token");
  }

  /**
   * The same tokenizer reporting another id (models that share a vocabulary share one loaded
   * tokenizer, ~1 s and ~100 MB each).
   */
  withId(id: string): HfTokenizer {
    return new HfTokenizer(id, this.#core, this.#config);
  }

  /**
   * Loads a tokenizer from local `tokenizer.json` and `tokenizer_config.json` files;
   * `renames` gives added tokens another text by id (a sibling model's vocabulary that differs
   * only there, e.g. DeepSeek-V3.1's `<think>` where V3's files have a placeholder).
   */
  static fromFiles(
    id: string,
    tokenizerJsonPath: string,
    configPath: string,
    renames: Readonly<Record<number, string>> = {},
  ): HfTokenizer {
    const json = JSON.parse(Deno.readTextFileSync(tokenizerJsonPath));
    for (const added of json.added_tokens ?? []) {
      const text = renames[added.id];
      if (text !== undefined) added.content = text;
    }
    const config = JSON.parse(Deno.readTextFileSync(configPath));
    return new HfTokenizer(id, json, config);
  }

  #requiredId(token: string | undefined, field: string): number {
    const tokenId = token === undefined ? undefined : this.#core.token_to_id(token);
    if (tokenId === undefined) {
      throw new Error(
        `${this.id}: tokenizer_config.json ${field} ${token} is not in the vocabulary`,
      );
    }
    return tokenId;
  }

  /** Id of a token of the vocabulary (special or not), or undefined. */
  tokenToId(token: string): number | undefined {
    return this.#core.token_to_id(token);
  }

  encode(text: string): number[] {
    return this.#core.encode(text, { add_special_tokens: false }).ids;
  }

  decode(ids: ArrayLike<number>): string {
    // The core throws on an empty list (a reply that is only its stop token decodes to "").
    if (ids.length === 0) return "";
    return this.#core.decode(Array.from(ids), { skip_special_tokens: false });
  }

  /**
   * Renders messages with the model's chat template to a string, as transformers'
   * `apply_chat_template(..., tokenize=False)` does.
   */
  applyChatTemplate(messages: object[], options: ChatTemplateOptions = {}): string {
    if (this.chatTemplate === undefined) throw new Error(`${this.id} has no chat template`);
    this.#template ??= new Template(this.chatTemplate);
    const { addGenerationPrompt = false, ...variables } = options;
    return this.#template.render({
      bos_token: tokenText(this.#config.bos_token) ?? "",
      eos_token: tokenText(this.#config.eos_token) ?? "",
      pad_token: tokenText(this.#config.pad_token) ?? "",
      ...variables,
      messages,
      add_generation_prompt: addGenerationPrompt,
    });
  }
}
