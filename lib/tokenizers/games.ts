/**
 * The games tokenizer of `local/games2`: a word-level Hugging Face `tokenizer.json` learned from
 * the environments' transcripts (`scripts/tokenizer.ts`, {@link buildWordLevelTokenizer}), in
 * which the chat markup, the games' words and every number from 0 to 100 are single tokens,
 * with character and byte fallback so any text still encodes. It is loaded from
 * `models/games_tokenizer/` by {@link HfTokenizer}, the code that loads Qwen3's.
 *
 * @module
 */

import { HfTokenizer } from "./hf.ts";

/** Identifier of the games tokenizer (get_info's `tokenizer_id`). */
export const GAMES_TOKENIZER_ID = "tinkerbench/games";

/** The folder holding the games tokenizer's `tokenizer.json` and `tokenizer_config.json`. */
export const GAMES_TOKENIZER_DIR = new URL("../../models/games_tokenizer/", import.meta.url);

let cached: HfTokenizer | undefined;

/**
 * The games tokenizer (read once per process).
 *
 * @example
 * const tok = loadGamesTokenizer();
 * tok.encode("Above 0, below 11. \\boxed{5}<|im_end|>").length; // 10
 */
export function loadGamesTokenizer(): HfTokenizer {
  cached ??= HfTokenizer.fromFiles(
    GAMES_TOKENIZER_ID,
    new URL("tokenizer.json", GAMES_TOKENIZER_DIR).pathname,
    new URL("tokenizer_config.json", GAMES_TOKENIZER_DIR).pathname,
  );
  return cached;
}
