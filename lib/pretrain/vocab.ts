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
import { buildWordLevelTokenizer } from "../tokenizers/word_level.ts";
import type { ChatMLRenderer } from "../renderers/chatml.ts";
import { Rng } from "../util/random.ts";
import {
  playTranscript,
  PRETRAIN_MIX,
  transcriptExample,
  TranscriptStream,
} from "./transcripts.ts";

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
export function buildGamesTokenizer(
  options: Partial<GamesVocabOptions> = {},
): Record<string, unknown> {
  const o = { ...GAMES_VOCAB_DEFAULTS, ...options };
  const bytes = new ByteTokenizer();
  const stream = new TranscriptStream(o.seed, PRETRAIN_MIX);
  const texts = stream.next(o.transcripts).map((t) => bytes.decode(transcriptExample(t).tokens));
  return buildWordLevelTokenizer(texts, {
    specialTokens: BYTE_SPECIAL_TOKENS,
    vocabSize: o.vocabSize,
    requiredWords: numberWords(),
  });
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
 *
 * @example
 * tokenCounts(["game:GuessTheNumber-v0-easy"], new ChatMLRenderer(loadGamesTokenizer()));
 */
export function tokenCounts(
  envIds: readonly string[],
  renderer: ChatMLRenderer<Tokenizer>,
  { episodes = 100, seed = 0 }: { episodes?: number; seed?: number } = {},
): TokenCounts[] {
  return envIds.map((envId) => {
    let moves = 0, moveTokens = 0, episodeTokens = 0, maxEpisode = 0;
    for (let i = 0; i < episodes; i++) {
      const t = playTranscript(envId, seed + i, new Rng(seed + i + 7919), {
        maxTokens: Infinity,
        renderer,
      });
      for (const m of t.messages.filter((m) => m.role === "assistant")) {
        moves++;
        moveTokens += renderer.tokenizer.encode(`${m.content}<|im_end|>`).length;
      }
      const n = transcriptExample(t, renderer).tokens.length;
      episodeTokens += n;
      maxEpisode = Math.max(maxEpisode, n);
    }
    return {
      envId,
      perMove: moveTokens / moves,
      perEpisode: episodeTokens / episodes,
      maxEpisode,
    };
  });
}
