/**
 * Tokenizers by model name: `Qwen/Qwen3-*` → the Qwen3 Hugging Face tokenizer (offline),
 * `local/games2` → the games tokenizer, `local/tools` → the tools tokenizer, other `local/*` → the byte tokenizer of the local models.
 *
 * @module
 */

import { ByteTokenizer } from "./byte.ts";
import { loadGamesTokenizer, loadToolsTokenizer } from "./games.ts";
import { loadQwen3Tokenizer } from "./qwen3.ts";
import type { Tokenizer } from "./types.ts";

/** Model-name patterns with a tokenizer, for error messages. */
export const KNOWN_TOKENIZER_PATTERNS = ["Qwen/Qwen3-*", "local/*"] as const;

/** The local models that do not use the byte tokenizer. */
const LOCAL_TOKENIZERS: Readonly<Record<string, () => Tokenizer>> = {
  "local/games2": loadGamesTokenizer,
  "local/tools": loadToolsTokenizer,
};

/**
 * The tokenizer of a model.
 *
 * @example
 * getTokenizer("Qwen/Qwen3-8B").eosTokenId; // 151645
 * getTokenizer("local/tiny").eosTokenId; // 258
 * getTokenizer("local/games2").id; // "tinkerbench/games"
 */
export function getTokenizer(modelName: string): Tokenizer {
  if (/^Qwen\/Qwen3-[^/]+$/.test(modelName)) return loadQwen3Tokenizer(modelName);
  if (/^local\/[^/]+$/.test(modelName)) {
    return LOCAL_TOKENIZERS[modelName]?.() ?? new ByteTokenizer();
  }
  throw new Error(
    `no tokenizer for model ${JSON.stringify(modelName)}: known models are ${
      KNOWN_TOKENIZER_PATTERNS.join(", ")
    }`,
  );
}
