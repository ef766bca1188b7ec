/**
 * A pretraining transcript: one played episode as a chat, and how it is played. Its own file, so
 * the game and tool transcript players both name it without importing each other.
 *
 * @module
 */

import type { ChatMLRenderer } from "../renderers/chatml.ts";
import type { Message } from "../renderers/types.ts";
import type { Tokenizer } from "../tokenizers/types.ts";

/** One played episode as a chat, with what the environment made of each move. */
export interface Transcript {
  envId: string;
  envSeed: number;
  /** user (rules), assistant (move), user (feedback), …, ending with the last kept move. */
  messages: Message[];
  /** Each kept move's `info.reason` and reward. */
  reasons: string[];
  rewards: number[];
  /** The episode ended (by the rules or the turn limit) within the kept turns. */
  finished: boolean;
  /** Indices in `messages` of assistant messages that are mistakes, not trained on. */
  mistakes?: number[];
}

/** Options of `playTranscript` (./transcripts.ts). */
export interface TranscriptOptions {
  /**
   * Most tokens of the rendered example: turns past this are dropped, so an example fits the
   * model's context (inputs are tokens[:-1], so 1025 tokens fill a 1024 context exactly).
   */
  maxTokens?: number;
  renderer?: ChatMLRenderer<Tokenizer>;
  /** Share of GuessTheNumber transcripts played by bisection (`formatPlayer`'s option). */
  bisectShare?: number;
  /** Chance that a turn of a tool transcript is a mistake (`playToolTranscript`; default 0). */
  mistakeShare?: number;
}
