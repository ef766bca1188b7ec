/**
 * Tokenizers by model name: a model's own Hugging Face files (local directory, cache, npm
 * package, or fetched from the hub), the games tokenizer of `local/games2`, the tools tokenizer
 * of `local/tools`, the byte tokenizer of the other local models.
 *
 * @module
 */

export type { Tokenizer } from "./types.ts";
export { specialTokenId } from "./types.ts";
export { ByteTokenizer } from "./byte.ts";
export { HfTokenizer } from "./hf.ts";
export {
  fetchHfTokenizerFiles,
  fetchNpmTokenizerFiles,
  findHfTokenizerFiles,
  hfCacheDir,
  type HfTokenizerFiles,
  NPM_TOKENIZER_PACKAGES,
  npmTokenizerDir,
  npmTokenizerFiles,
  TokenizerFilesError,
} from "./hf_files.ts";
export { loadQwen3Tokenizer, QWEN3_IDS } from "./qwen3.ts";
export {
  GAMES_TOKENIZER_DIR,
  GAMES_TOKENIZER_ID,
  loadGamesTokenizer,
  loadToolsTokenizer,
  TOOLS_TOKENIZER_DIR,
  TOOLS_TOKENIZER_ID,
} from "./games.ts";
export { buildWordLevelTokenizer, preTokenize, WORD_PATTERN } from "./word_level.ts";

export { getTokenizer, KNOWN_TOKENIZER_PATTERNS, prepareTokenizer } from "./registry.ts";
