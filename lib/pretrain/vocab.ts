/**
 * The games tokenizer's vocabulary, learned from the environments' texts: transcripts of the
 * pretraining mix rendered as ChatML text, split into words by
 * {@link buildWordLevelTokenizer}, plus every number from 0 to 100 (with and without a leading
 * space) so any GuessTheNumber guess or bound is one token even when the sample missed it; and
 * the token counts the model card compares tokenizers by.
 *
 * @module
 */

import { BYTE_SPECIAL_TOKENS, ByteTokenizer } from "../tokenizers/byte.ts";
import type { Tokenizer } from "../tokenizers/types.ts";
import { buildWordLevelTokenizer, TOOLS_WORD_PATTERN } from "../tokenizers/word_level.ts";
import type { ChatMLRenderer } from "../renderers/chatml.ts";
import { Rng } from "../util/random.ts";
import {
  playTranscript,
  PRETRAIN_MIX,
  TOOLS_TOKENIZER_MIX,
  transcriptExample,
  TranscriptStream,
} from "./transcripts.ts";
import { isToolEnvId, playToolTranscript } from "./tool_transcripts.ts";

/** Settings of the games tokenizer's build (the committed file used these defaults). */
export interface GamesVocabOptions {
  /** Transcripts of {@link PRETRAIN_MIX} the words are counted in. */
  transcripts: number;
  /** Seeds the transcript stream. */
  seed: number;
  /** Cap on the vocabulary size. */
  vocabSize: number;
}

/** Defaults: 3,000 transcripts (seed 123), at most 1,024 tokens. */
export const GAMES_VOCAB_DEFAULTS: GamesVocabOptions = {
  transcripts: 3000,
  seed: 123,
  vocabSize: 1024,
};

/** The `tokenizer_config.json` of the games tokenizer (ChatML markup, no text clean-up). */
export const GAMES_TOKENIZER_CONFIG = {
  tokenizer_class: "PreTrainedTokenizerFast",
  eos_token: "<|im_end|>",
  pad_token: "<|endoftext|>",
  bos_token: null,
  unk_token: null,
  clean_up_tokenization_spaces: false,
  model_max_length: 1024,
};

/** Numbers 0–100, bare and after a space: the values GuessTheNumber can name. */
function numberWords(): string[] {
  return Array.from({ length: 101 }, (_, n) => [String(n), ` ${n}`]).flat();
}

/**
 * The games tokenizer's `tokenizer.json` object, built from seeded transcripts (the same
 * options give the same file).
 *
 * @example
 * const json = buildGamesTokenizer({ transcripts: 200 });
 * await Deno.writeTextFile("tokenizer.json", JSON.stringify(json));
 */
export async function buildGamesTokenizer(
  options: Partial<GamesVocabOptions> = {},
): Promise<Record<string, unknown>> {
  const o = { ...GAMES_VOCAB_DEFAULTS, ...options };
  return buildWordLevelTokenizer(await mixTexts(PRETRAIN_MIX, o, 1025), {
    specialTokens: BYTE_SPECIAL_TOKENS,
    vocabSize: o.vocabSize,
    requiredWords: numberWords(),
  });
}

/** Settings of the tools tokenizer's build: the games tokenizer's, a larger vocabulary. */
export const TOOLS_VOCAB_DEFAULTS: GamesVocabOptions = {
  transcripts: 3000,
  seed: 124,
  vocabSize: 1536,
};

/**
 * The tools tokenizer's `tokenizer.json` object: the games tokenizer extended, not rebuilt.
 * Its first tokens are the games tokenizer's, with the same ids (so `local/tools` can start
 * from `local/games2`'s weights, and game text encodes as before wherever it did not fall back
 * to characters), then the frequent words of `local/tools`' mix ({@link TOOLS_TOKENIZER_MIX}:
 * the tool declarations, the `<tool_call>` JSON, the tool environments' texts). Byte fallback
 * is kept. Its pre-tokenizer ({@link TOOLS_WORD_PATTERN}) also keeps a space with the symbols
 * after it, so the JSON of declarations and calls takes fewer tokens.
 *
 * @example
 * const json = await buildToolsTokenizer(gamesTokenizerJson, { transcripts: 200 });
 */
export async function buildToolsTokenizer(
  games: { model: { vocab: Record<string, number> } },
  options: Partial<GamesVocabOptions> = {},
): Promise<Record<string, unknown>> {
  const o = { ...TOOLS_VOCAB_DEFAULTS, ...options };
  const inOrder = Object.entries(games.model.vocab).sort((a, b) => a[1] - b[1]).map(([w]) => w);
  // Whole episodes: the bytes of a WhoDunIt case run far past 1025.
  return buildWordLevelTokenizer(await mixTexts(TOOLS_TOKENIZER_MIX, o, Infinity), {
    specialTokens: BYTE_SPECIAL_TOKENS,
    vocabSize: o.vocabSize,
    requiredWords: inOrder,
    minTexts: 5,
    pattern: TOOLS_WORD_PATTERN,
  });
}

/** The ChatML text of a mix's seeded transcripts, cut at `maxTokens` bytes. */
async function mixTexts(
  mix: typeof PRETRAIN_MIX,
  o: GamesVocabOptions,
  maxTokens: number,
): Promise<string[]> {
  const bytes = new ByteTokenizer();
  const stream = new TranscriptStream(o.seed, mix, { maxTokens });
  return (await stream.next(o.transcripts)).map((t) => bytes.decode(transcriptExample(t).tokens));
}

/** Token counts of one environment's format-player episodes under one tokenizer. */
export interface TokenCounts {
  envId: string;
  /** Mean tokens of a move with its `<|im_end|>` (what the policy samples per turn). */
  perMove: number;
  /** Mean tokens of a whole episode as one datum (prompt, moves and feedback), uncut. */
  perEpisode: number;
  /** The longest episode seen. */
  maxEpisode: number;
}

/**
 * Tokens per move and per episode of `episodes` format-player episodes of each environment
 * (episode i from env seed `seed + i`), rendered by `renderer`: the model card's before/after.
 * A move is the assistant's message with its `<|im_end|>` (a tool call included).
 *
 * @example
 * await tokenCounts(["game:GuessTheNumber-v0-easy"], new ChatMLRenderer(loadGamesTokenizer()));
 */
export async function tokenCounts(
  envIds: readonly string[],
  renderer: ChatMLRenderer<Tokenizer>,
  { episodes = 100, seed = 0 }: { episodes?: number; seed?: number } = {},
): Promise<TokenCounts[]> {
  const out: TokenCounts[] = [];
  for (const envId of envIds) {
    let moves = 0, moveTokens = 0, episodeTokens = 0, maxEpisode = 0;
    for (let i = 0; i < episodes; i++) {
      const rng = new Rng(seed + i + 7919), opts = { maxTokens: Infinity, renderer };
      const t = isToolEnvId(envId)
        ? await playToolTranscript(envId, seed + i, rng, opts)
        : playTranscript(envId, seed + i, rng, opts);
      for (const m of t.messages.filter((m) => m.role === "assistant")) {
        moves++;
        const ex = renderer.buildSupervisedExample([m]);
        moveTokens += ex.weights.reduce((a, w) => a + w, 0);
      }
      const n = transcriptExample(t, renderer).tokens.length;
      episodeTokens += n;
      maxEpisode = Math.max(maxEpisode, n);
    }
    out.push({
      envId,
      perMove: moveTokens / moves,
      perEpisode: episodeTokens / episodes,
      maxEpisode,
    });
  }
  return out;
}
