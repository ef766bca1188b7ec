/**
 * Mastermind with GEM's rules: guess a hidden code of distinct digits; each guess gets black pegs
 * (right digit, right place) and white pegs (right digit, wrong place). The action is the last
 * `\boxed{d d …}` (space-separated digits).
 *
 * Rewards (GEM's milestone shaping): a guess earns `(new best black pegs − old best) / length`,
 * so a whole episode sums to at most 1.0 and cracking the code ends it. Wrong length, digits out
 * of range and repeated guesses score 0; an unparseable action ends the game with −0.1.
 *
 * @module
 */

import type { Rng } from "../util/random.ts";
import { lastBoxed, type Move, pick, REWARD, TurnGame } from "./game.ts";

/** Code length, digits 1..numbers, turn limit. */
export interface MastermindOptions {
  /** Digits in the code. */
  length: number;
  /** How many digits each position may hold. */
  numbers: number;
  /** Turn limit of an episode. */
  maxTurns: number;
}

/** GEM's variants (`game:Mastermind-v0-*`); `random` draws from {@link MASTERMIND_RANDOM}. */
export const MASTERMIND_VARIANTS = {
  easy: { length: 2, numbers: 6, maxTurns: 10 },
  hard: { length: 4, numbers: 8, maxTurns: 30 },
} as const satisfies Record<string, MastermindOptions>;

/** The settings `-random` picks from at each reset, as in GEM. */
export const MASTERMIND_RANDOM: readonly MastermindOptions[] = [
  { length: 2, numbers: 4, maxTurns: 10 },
  { length: 4, numbers: 6, maxTurns: 20 },
  { length: 4, numbers: 8, maxTurns: 30 },
];

/** The game's state between moves. */
export interface MastermindState {
  /** The game's settings. */
  opts: MastermindOptions;
  /** The hidden code. */
  code: number[];
  /** Guesses so far, in order. */
  guesses: string[];
  /** The most exact matches of any guess so far. */
  best: number;
}

/** Black and white pegs of a guess against a code. */
export function scoreGuess(code: number[], guess: number[]): [black: number, white: number] {
  let black = 0;
  const restCode: number[] = [], restGuess: number[] = [];
  code.forEach((c, i) => {
    if (guess[i] === c) black++;
    else {
      restCode.push(c);
      restGuess.push(guess[i]);
    }
  });
  let white = 0;
  for (const g of restGuess) {
    const j = restCode.indexOf(g);
    if (j >= 0) {
      white++;
      restCode.splice(j, 1);
    }
  }
  return [black, white];
}

/** The Mastermind environment. */
export class Mastermind extends TurnGame<MastermindState> {
  /** Registry id of this variant. */
  readonly id: string;
  #variant: "easy" | "hard" | "random";

  /** A game of the given variant (`random` picks one at each reset). */
  constructor(variant: "easy" | "hard" | "random" = "easy") {
    super(
      variant === "random" ? MASTERMIND_RANDOM[0].maxTurns : MASTERMIND_VARIANTS[variant].maxTurns,
    );
    this.#variant = variant;
    this.id = `game:Mastermind-v0-${variant}`;
  }

  /** Builds the start state from a seeded generator. */
  protected init(rng: Rng): MastermindState {
    const opts = this.#variant === "random"
      ? pick(rng, MASTERMIND_RANDOM)
      : MASTERMIND_VARIANTS[this.#variant];
    this.maxTurns = opts.maxTurns;
    const pool = Array.from({ length: opts.numbers }, (_, i) => i + 1);
    const code: number[] = [];
    for (let i = 0; i < opts.length; i++) code.push(pool.splice(rng.int(pool.length), 1)[0]);
    return { opts, code, guesses: [], best: 0 };
  }

  /** The rules, the action format and the start state. */
  protected intro(): string {
    const { length, numbers } = this.state!.opts;
    const example = Array.from({ length }, (_, i) => i + 1).join(" ");
    return `You are playing Mastermind. Crack a secret code of ${length} distinct digits, each ` +
      `from 1 to ${numbers}. After each guess you get black pegs (right digit, right place) and ` +
      `white pegs (right digit, wrong place). You have ${this.maxTurns} turns. Give your guess ` +
      `as space-separated digits in \\boxed{}, e.g. \\boxed{${example}}.`;
  }

  /** Plays one action (the model's whole reply). */
  protected play(action: string): Move {
    const s = this.state!;
    const text = lastBoxed(action);
    if (text === null || !/^\d+(\s+\d+)*$/.test(text)) {
      return this.formatError("digits in \\boxed{}, e.g. \\boxed{1 2}");
    }
    const guess = text.split(/\s+/).map(Number);
    const key = guess.join(" ");
    if (guess.length !== s.opts.length) {
      return this.#invalid(
        `Your guess has ${guess.length} digits; the code has ${s.opts.length}.`,
        "wrong_length",
      );
    }
    if (guess.some((d) => d < 1 || d > s.opts.numbers)) {
      return this.#invalid(`Digits must be between 1 and ${s.opts.numbers}.`, "out_of_range");
    }
    if (s.guesses.includes(key)) return this.#invalid(`You already guessed ${key}.`, "repeated");
    s.guesses.push(key);
    const [black, white] = scoreGuess(s.code, guess);
    let reward = 0;
    if (black > s.best) {
      reward = (black - s.best) / s.opts.length;
      s.best = black;
    }
    if (black === s.opts.length) {
      return { observation: `Correct! The code was ${key}.`, reward, reason: "correct", end: true };
    }
    return {
      observation:
        `Turn ${this.turn}: ${key} gets ${black} black peg(s) and ${white} white peg(s).`,
      reward,
      reason: "scored",
    };
  }

  #invalid(observation: string, reason: string): Move {
    return { observation: `Turn ${this.turn}: ${observation}`, reward: REWARD.invalid, reason };
  }

  /** An unreset game of the same variant. */
  protected fresh(): Mastermind {
    return new Mastermind(this.#variant);
  }
}
