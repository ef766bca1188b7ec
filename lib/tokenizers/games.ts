/**
 * The word-level tokenizers of the local models, each a Hugging Face `tokenizer.json` learned
 * from the environments' transcripts (`scripts/tokenizer.ts`, {@link buildWordLevelTokenizer})
 * in which the chat markup, the games' words and every number from 0 to 100 are single tokens,
 * with character and byte fallback so any text still encodes, loaded by {@link HfTokenizer}, the
 * code that loads Qwen3's:
 *
 * - the games tokenizer of `local/games2` (`models/games_tokenizer/`);
 * - the tools tokenizer of `local/tools` (`models/tools_tokenizer/`): the games tokenizer
 *   extended (its tokens keep their ids) with the tool declarations' and tool calls' words.
 *   A new file rather than a change to the games tokenizer, whose ids `local/games2`'s shipped
 *   weights are tied to.
 *
 * @module
 */

import { HfTokenizer } from "./hf.ts";

/** Identifier of the games tokenizer (get_info's `tokenizer_id`). */
export const GAMES_TOKENIZER_ID = "tinkerbench/games";

/** The folder holding the games tokenizer's `tokenizer.json` and `tokenizer_config.json`. */
export const GAMES_TOKENIZER_DIR = new URL("../../models/games_tokenizer/", import.meta.url);

/** Identifier of the tools tokenizer (get_info's `tokenizer_id`). */
export const TOOLS_TOKENIZER_ID = "tinkerbench/tools";

/** The folder holding the tools tokenizer's files. */
export const TOOLS_TOKENIZER_DIR = new URL("../../models/tools_tokenizer/", import.meta.url);

const cached = new Map<string, HfTokenizer>();

function load(id: string, dir: URL): HfTokenizer {
  let tok = cached.get(id);
  if (!tok) {
    tok = HfTokenizer.fromFiles(
      id,
      new URL("tokenizer.json", dir).pathname,
      new URL("tokenizer_config.json", dir).pathname,
    );
    cached.set(id, tok);
  }
  return tok;
}

/**
 * The games tokenizer (read once per process).
 *
 * @example
 * const tok = loadGamesTokenizer();
 * tok.encode("Above 0, below 11. \\boxed{5}<|im_end|>").length; // 10
 */
export function loadGamesTokenizer(): HfTokenizer {
  return load(GAMES_TOKENIZER_ID, GAMES_TOKENIZER_DIR);
}

/**
 * The tools tokenizer (read once per process).
 *
 * @example
 * loadToolsTokenizer().encode('{"name": "guess", "arguments": {"number": 7}}').length;
 */
export function loadToolsTokenizer(): HfTokenizer {
  return load(TOOLS_TOKENIZER_ID, TOOLS_TOKENIZER_DIR);
}
