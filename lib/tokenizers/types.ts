/**
 * The tokenizer interface shared by the local byte tokenizer and the Hugging Face tokenizers of
 * the cloud models. Renderers build token ids through it, so rollouts stay token-in/token-out.
 *
 * @module
 */

/** A tokenizer: text ↔ token ids, plus the ids a renderer and a sampler need. */
export interface Tokenizer {
  /** Identifier of the tokenizer (a model name such as `Qwen/Qwen3-8B`, or `tinkerbench/byte`). */
  readonly id: string;
  /** Number of token ids, special tokens included. */
  readonly vocabSize: number;
  /** Id that ends an assistant message (the sampling stop token). */
  readonly eosTokenId: number;
  /** Id used for padding. */
  readonly padTokenId: number;
  /** Special (added) tokens by text, with their ids; their text in `encode` input becomes that id. */
  readonly specialTokens: ReadonlyMap<string, number>;
  /** Encodes text to ids, with no BOS/EOS added; special-token text becomes its single id. */
  encode(text: string): number[];
  /** Decodes ids to text, special tokens included as their text. */
  decode(ids: ArrayLike<number>): string;
}

/** The id of a special token, or an error naming the tokenizer when it has no such token. */
export function specialTokenId(tokenizer: Tokenizer, token: string): number {
  const id = tokenizer.specialTokens.get(token);
  if (id === undefined) {
    throw new Error(`tokenizer ${tokenizer.id} has no special token ${JSON.stringify(token)}`);
  }
  return id;
}
