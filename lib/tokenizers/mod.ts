/**
 * Tokenizers by model name: `Qwen/Qwen3-*` → the Qwen3 Hugging Face tokenizer (offline),
 * `local/games2` → the games tokenizer, `local/tools` → the tools tokenizer, other `local/*` → the byte tokenizer of the local models.
 *
 * @module
 */

export type { Tokenizer } from "./types.ts";
export { specialTokenId } from "./types.ts";
export { ByteTokenizer } from "./byte.ts";
export { HfTokenizer } from "./hf.ts";
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

export { getTokenizer, KNOWN_TOKENIZER_PATTERNS } from "./registry.ts";
