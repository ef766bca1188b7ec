/**
 * Hangman with GEM's rules: guess a hidden word one letter at a time, or the whole word. The
 * action is the last `\boxed{…}` of letters: one letter is a letter guess, more is a word guess.
 *
 * Rewards: a letter in the word earns `0.5 × revealed / length`; guessing the whole word earns
 * `0.5 + 0.5 × (still hidden / length)` and ends the game, so a full episode sums to at most 1.0
 * either way. Wrong letters, wrong words, repeats and wrong-length words score 0; an action with
 * no boxed letters ends the game with −0.1. As in GEM, revealing every letter does not end the
 * game: the word must still be named.
 *
 * @module
 */

import type { Rng } from "../util/random.ts";
import { lastBoxed, type Move, pick, REWARD, TurnGame } from "./game.ts";
import { WORDS } from "./words.ts";

/** Word length and turn limit. */
export interface HangmanOptions {
  /** Letters in the word. */
  length: number;
  /** Turn limit of an episode. */
  maxTurns: number;
}

/** GEM's variants (`game:Hangman-v0-*`). */
export const HANGMAN_VARIANTS = {
  easy: { length: 3, maxTurns: 10 },
  hard: { length: 7, maxTurns: 20 },
} as const satisfies Record<string, HangmanOptions>;

/** The settings `-random` picks from at each reset, as in GEM. */
export const HANGMAN_RANDOM: readonly HangmanOptions[] = [
  { length: 3, maxTurns: 10 },
  { length: 5, maxTurns: 15 },
  { length: 7, maxTurns: 20 },
];

/** The game's state between moves. */
export interface HangmanState {
  /** The hidden word. */
  word: string;
  /** The word as shown: a letter once guessed, else `_`. */
  board: string[];
  /** Letters guessed so far, in order. */
  guessed: string[];
}

/** The Hangman environment. */
export class Hangman extends TurnGame<HangmanState> {
  /** Registry id of this variant. */
  readonly id: string;
  #variant: "easy" | "hard" | "random";

  /** A game of the given variant (`random` picks one at each reset). */
  constructor(variant: "easy" | "hard" | "random" = "easy") {
    super(variant === "random" ? HANGMAN_RANDOM[0].maxTurns : HANGMAN_VARIANTS[variant].maxTurns);
    this.#variant = variant;
    this.id = `game:Hangman-v0-${variant}`;
  }

  /** Builds the start state from a seeded generator. */
  protected init(rng: Rng): HangmanState {
    const opts = this.#variant === "random"
      ? pick(rng, HANGMAN_RANDOM)
      : HANGMAN_VARIANTS[this.#variant];
    this.maxTurns = opts.maxTurns;
    const word = pick(rng, WORDS[opts.length]).toUpperCase();
    return { word, board: [...word].map(() => "_"), guessed: [] };
  }

  /** The rules, the action format and the start state. */
  protected intro(): string {
    const n = this.state!.word.length;
    return `You are playing Hangman. Guess the secret ${n}-letter word. Each turn, guess one ` +
      `letter, e.g. \\boxed{E}, or the whole word, e.g. \\boxed{${"A".repeat(n)}}. You have ` +
      `${this.maxTurns} turns.\nWord: ${this.state!.board.join(" ")}`;
  }

  /** Plays one action (the model's whole reply). */
  protected play(action: string): Move {
    const s = this.state!;
    const text = lastBoxed(action)?.replace(/\s+/g, "").toUpperCase();
    if (!text || !/^[A-Z]+$/.test(text)) {
      return this.formatError("a letter in \\boxed{}, e.g. \\boxed{E}");
    }
    const n = s.word.length;
    if (text.length > 1) {
      if (text === s.word) {
        const hidden = s.board.filter((c) => c === "_").length;
        return {
          observation: `Correct! The word was ${s.word}.`,
          reward: 0.5 * REWARD.success + 0.5 * hidden / n,
          reason: "correct",
          end: true,
        };
      }
      if (text.length !== n) {
        return this.#say(
          `${text} has ${text.length} letters; the word has ${n}.`,
          REWARD.invalid,
          "wrong_length",
        );
      }
      return this.#say(`${text} is not the word.`, REWARD.step, "wrong_word");
    }
    if (s.guessed.includes(text)) {
      return this.#say(`You already guessed ${text}.`, REWARD.invalid, "repeated");
    }
    s.guessed.push(text);
    let revealed = 0;
    [...s.word].forEach((c, i) => {
      if (c === text) {
        s.board[i] = c;
        revealed++;
      }
    });
    if (revealed === 0) return this.#say(`${text} is not in the word.`, REWARD.step, "miss");
    return this.#say(`${text} is in the word.`, 0.5 * revealed / n, "hit");
  }

  #say(observation: string, reward: number, reason: string): Move {
    return {
      observation: `Turn ${this.turn}: ${observation}\nWord: ${this.state!.board.join(" ")}`,
      reward,
      reason,
    };
  }

  /** An unreset game of the same variant. */
  protected fresh(): Hangman {
    return new Hangman(this.#variant);
  }
}
