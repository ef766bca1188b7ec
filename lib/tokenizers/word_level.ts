/**
 * Building a word-level Hugging Face `tokenizer.json` from sample texts: every frequent word,
 * number, whitespace run and punctuation run of the texts becomes one token, and anything else
 * falls back to single characters, then to UTF-8 bytes (`<0x41>`), so any text still encodes
 * and decodes back exactly. The file is a standard BPE model with no merges and
 * `ignore_merges` (a word in the vocabulary is taken whole, another word splits into
 * characters), `byte_fallback`, a `Split` pre-tokenizer and a `ByteFallback` + `Fuse` decoder:
 * Hugging Face `tokenizers` (Rust, Python) and `@huggingface/tokenizers` load it as they load
 * any model's, and {@link HfTokenizer} reads it like Qwen3's.
 *
 * @module
 */

/**
 * How text splits into candidate tokens: a LaTeX command with its brace (`\boxed{`), a word or
 * a number with at most one leading space (` below`, ` 11`), a newline, a run of spaces, a run
 * of other symbols. Every character matches one alternative, so nothing is lost.
 */
export const WORD_PATTERN = String
  .raw` ?\\[A-Za-z]+\{?| ?[A-Za-z]+| ?[0-9]+|\n| +|\s|[^\sA-Za-z0-9]+`;

/**
 * {@link WORD_PATTERN} with a symbol run taking its leading space too (` "`, ` {"`), as words
 * and numbers do: the tools tokenizer's, for JSON, where `", "` and `: {"` are everywhere.
 */
export const TOOLS_WORD_PATTERN = String
  .raw` ?\\[A-Za-z]+\{?| ?[A-Za-z]+| ?[0-9]+|\n| ?[^\sA-Za-z0-9]+| +|\s`;

/** Options of {@link buildWordLevelTokenizer}. */
export interface WordLevelOptions {
  /** Added special tokens (chat markup), given the first ids in this order. */
  specialTokens: readonly string[];
  /** Total vocabulary size (specials, 256 bytes, characters and words); the most frequent words fill it. */
  vocabSize: number;
  /** Words that get a token whatever their count (e.g. every number a game can name). */
  requiredWords?: readonly string[];
  /** Words seen fewer times than this stay out. */
  minCount?: number;
  /** The pre-tokenizer's pattern (default {@link WORD_PATTERN}). */
  pattern?: string;
  /**
   * Words found in fewer texts than this stay out (default 1): names made up for one text
   * (random tool names) recur inside it but are no word of the language.
   */
  minTexts?: number;
}

/** The characters every vocabulary holds as tokens: printable ASCII, newline and tab. */
const BASE_CHARS = [
  "\n",
  "\t",
  ...Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)),
];

/** The byte-fallback token of a byte, as Hugging Face spells it. */
export function byteToken(byte: number): string {
  return `<0x${byte.toString(16).toUpperCase().padStart(2, "0")}>`;
}

/** Splits text into candidate tokens with `pattern`, special tokens taken out first. */
export function preTokenize(
  text: string,
  specialTokens: readonly string[] = [],
  pattern: string = WORD_PATTERN,
): string[] {
  const pieces = specialTokens.length === 0 ? [text] : text.split(
    new RegExp(specialTokens.map((t) => t.replace(/[|<>/\\^$.*+?()[\]{}]/g, "\\$&")).join("|")),
  );
  return pieces.flatMap((p) => p.match(new RegExp(pattern, "gu")) ?? []);
}

/**
 * A `tokenizer.json` (as an object, ready for `JSON.stringify`) whose vocabulary is the
 * special tokens, the 256 byte tokens, {@link BASE_CHARS}, the required words, then the words
 * of `texts` by decreasing count (ties in first-seen order, so the result is deterministic).
 *
 * @example
 * const json = buildWordLevelTokenizer(["Above 3, below 11. \\boxed{7}"], {
 *   specialTokens: ["<|endoftext|>", "<|im_end|>"],
 *   vocabSize: 400,
 * });
 * new HfTokenizer("demo", json, { eos_token: "<|im_end|>" }).encode(" below"); // one id
 */
export function buildWordLevelTokenizer(
  texts: Iterable<string>,
  {
    specialTokens,
    vocabSize,
    requiredWords = [],
    minCount = 2,
    minTexts = 1,
    pattern = WORD_PATTERN,
  }: WordLevelOptions,
): Record<string, unknown> {
  const counts = new Map<string, number>();
  const inTexts = new Map<string, number>();
  for (const text of texts) {
    const words = preTokenize(text, specialTokens, pattern);
    for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
    for (const w of new Set(words)) inTexts.set(w, (inTexts.get(w) ?? 0) + 1);
  }
  const vocab = new Map<string, number>();
  const add = (token: string) => {
    if (!vocab.has(token)) vocab.set(token, vocab.size);
  };
  specialTokens.forEach(add);
  for (let b = 0; b < 256; b++) add(byteToken(b));
  BASE_CHARS.forEach(add);
  requiredWords.forEach(add);
  if (vocab.size > vocabSize) {
    throw new Error(`vocabulary size ${vocabSize} is below the ${vocab.size} required tokens`);
  }
  const words = [...counts]
    .filter(([w, n]) => n >= minCount && inTexts.get(w)! >= minTexts && [...w].length > 1)
    .sort((a, b) => b[1] - a[1]);
  for (const [w] of words) {
    if (vocab.size >= vocabSize) break;
    add(w);
  }
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: specialTokens.map((content) => ({
      id: vocab.get(content),
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: {
      type: "Split",
      pattern: { Regex: pattern },
      behavior: "Isolated",
      invert: false,
    },
    post_processor: null,
    decoder: { type: "Sequence", decoders: [{ type: "ByteFallback" }, { type: "Fuse" }] },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: true,
      ignore_merges: true,
      vocab: Object.fromEntries(vocab),
      merges: [],
    },
  };
}
