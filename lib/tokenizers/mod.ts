/**
 * Tokenizers by model name: `Qwen/Qwen3-*` → the Qwen3 Hugging Face tokenizer (offline),
 * `local/*` → the byte tokenizer of the local models.
 *
 * @module
 */

export type { Tokenizer } from "./types.ts";
export { specialTokenId } from "./types.ts";
export { ByteTokenizer } from "./byte.ts";
export { HfTokenizer } from "./hf.ts";
export { loadQwen3Tokenizer, QWEN3_IDS } from "./qwen3.ts";

export { getTokenizer, KNOWN_TOKENIZER_PATTERNS } from "./registry.ts";
