/**
 * GuessTheNumber, with GEM's rules and rewards: guess a hidden integer, the feedback says
 * higher or lower. A guess is the last `\boxed{N}` of the action.
 *
 * Rewards: a correct guess 1.0 (the episode ends); an action without a guess −0.1 (the episode
 * ends); out-of-range or repeated guesses and every other step 0; when the turns run out,
 * partial credit for the final guess, `1 − |guess − target| / (max − min)` (0 if it is out of
 * range).
 *
 * @module
 */

import { Rng } from "../util/random.ts";
import { lastBoxedInteger, type StepResult, type SyncEnv } from "./types.ts";

/** Range and turn limit of a variant. */
export interface GuessTheNumberOptions {
  /** Smallest possible number. */
  min: number;
  /** Largest possible number. */
  max: number;
  /** Turn limit of an episode. */
  maxTurns: number;
}

/** GEM's variants: easy 1–10 in 4 turns, hard 1–50 in 7 turns. */
export const GUESS_THE_NUMBER_VARIANTS = {
  easy: { min: 1, max: 10, maxTurns: 4 },
  hard: { min: 1, max: 50, maxTurns: 7 },
} as const satisfies Record<string, GuessTheNumberOptions>;

interface State {
  target: number;
  turn: number;
  guesses: number[];
  done: boolean;
}

/** The GuessTheNumber environment. `random` picks easy or hard at each reset. */
export class GuessTheNumber implements SyncEnv {
  readonly id: string;
  /**
   * `opd` and `combine` read the next reply as the teacher's hint. It says whether a guess was
   * right, not whether it was a good move, so no local model learns this game with them, not even
   * `local/hint`, taught to use the hint (models/README.md): such a run stops before it trains.
   * On hard, the reply to a malformed move says what was wrong, but the hinted teacher ranks every
   * move lower, so format errors rose there too (0.19 → 0.09 held out with opd).
   */
  readonly localModels = { opd: [], combine: [] } as const;
  #variant: "easy" | "hard" | "random";
  #opts: GuessTheNumberOptions;
  #state: State | null = null;

  /** A game of the given variant (`random` picks one at each reset). */
  constructor(variant: "easy" | "hard" | "random" = "easy") {
    this.#variant = variant;
    this.id = `game:GuessTheNumber-v0-${variant}`;
    this.#opts = GUESS_THE_NUMBER_VARIANTS[variant === "random" ? "easy" : variant];
  }

  get maxTurns(): number {
    return this.#opts.maxTurns;
  }

  reset(seed?: number): { observation: string; info: Record<string, unknown> } {
    const rng = new Rng(seed ?? Math.floor(Math.random() * 2 ** 31));
    if (this.#variant === "random") {
      this.#opts = GUESS_THE_NUMBER_VARIANTS[rng.uniform() < 0.5 ? "easy" : "hard"];
    }
    const { min, max, maxTurns } = this.#opts;
    this.#state = {
      target: min + rng.int(max - min + 1),
      turn: 0,
      guesses: [],
      done: false,
    };
    const observation =
      `You are playing Guess The Number. I am thinking of an integer between ${min} and ` +
      `${max} (inclusive). You have ${maxTurns} turns. After each guess I say whether the number is ` +
      `higher or lower. Give your guess as \\boxed{N}.`;
    return { observation, info: { min, max, maxTurns } };
  }

  step(action: string): StepResult {
    const s = this.#state;
    if (!s) throw new Error(`${this.id}: call reset() before step()`);
    if (s.done) throw new Error(`${this.id}: the episode is over; call reset()`);
    const { min, max, maxTurns } = this.#opts;
    s.turn++;
    const guess = lastBoxedInteger(action);
    if (guess === null) {
      s.done = true;
      return this.#result(
        "No guess found: answer with \\boxed{N}. Game over.",
        -0.1,
        true,
        false,
        "invalid_action",
      );
    }
    if (guess === s.target) {
      s.done = true;
      return this.#result(`Correct! The number was ${s.target}.`, 1, true, false, "correct");
    }
    let feedback: string, reason: string;
    if (guess < min || guess > max) {
      feedback = `${guess} is out of range: guess between ${min} and ${max}.`;
      reason = "out_of_range";
    } else if (s.guesses.includes(guess)) {
      feedback = `You already guessed ${guess}.`;
      reason = "repeated";
    } else {
      feedback = `The number is ${guess < s.target ? "higher" : "lower"} than ${guess}.`;
      reason = "wrong";
      s.guesses.push(guess);
    }
    if (s.turn >= maxTurns) {
      s.done = true;
      // GEM scores the final guess itself: out of range 0, else closeness (repeats included).
      const credit = guess < min || guess > max ? 0 : 1 - Math.abs(guess - s.target) / (max - min);
      return this.#result(
        `${feedback} Out of turns: the number was ${s.target}.`,
        credit,
        false,
        true,
        reason,
      );
    }
    return this.#result(`${feedback} ${maxTurns - s.turn} turns left.`, 0, false, false, reason);
  }

  spawn(sameState = false): GuessTheNumber {
    const env = new GuessTheNumber(this.#variant);
    if (sameState && this.#state) {
      env.#opts = this.#opts;
      env.#state = structuredClone(this.#state);
    }
    return env;
  }

  #result(
    observation: string,
    reward: number,
    terminated: boolean,
    truncated: boolean,
    reason: string,
  ) {
    return {
      observation,
      reward,
      terminated,
      truncated,
      info: { reason, turn: this.#state!.turn },
    };
  }
}

/** How a GuessTheNumber player used the feedback, counted over its guesses. */
export interface GuessStats {
  /** Moves with a `\boxed{N}` guess. */
  guesses: number;
  /** Guesses inside the range the rules and the feedback so far still allow. */
  consistent: number;
  /** Guesses at the middle of that range (either middle integer): what bisection plays. */
  bisecting: number;
  /** Guesses of a number guessed before. */
  repeated: number;
  /** Guesses outside the rules' range. */
  outOfRange: number;
  /** Per move, in order: whether it was a consistent guess (false without a guess). */
  consistentAt: boolean[];
}

/**
 * Replays an episode's text (the rules, then each move and the env's reply) and counts how the
 * guesses relate to the feedback: the diagnostics of "does the policy read the feedback, and
 * does it bisect" that success rate alone hides.
 *
 * @example
 * analyzeGuesses(rules, [{ action: "\\boxed{5}", feedback: "The number is higher than 5. 3 turns left." }]);
 */
export function analyzeGuesses(
  rules: string,
  moves: ReadonlyArray<{ action: string; feedback: string }>,
): GuessStats {
  const range = rules.match(/between (\d+) and (\d+)/);
  if (!range) throw new Error("analyzeGuesses: the rules text names no range");
  const min = Number(range[1]), max = Number(range[2]);
  let lo = min, hi = max;
  const seen = new Set<number>();
  const s: GuessStats = {
    guesses: 0,
    consistent: 0,
    bisecting: 0,
    repeated: 0,
    outOfRange: 0,
    consistentAt: [],
  };
  for (const { action, feedback } of moves) {
    const g = lastBoxedInteger(action);
    s.consistentAt.push(g !== null && g >= lo && g <= hi);
    if (g === null) continue;
    s.guesses++;
    if (g < min || g > max) s.outOfRange++;
    else if (seen.has(g)) s.repeated++;
    if (g === Math.floor((lo + hi) / 2) || g === Math.ceil((lo + hi) / 2)) s.bisecting++;
    seen.add(g);
    const fb = feedback.match(/The number is (higher|lower) than/);
    if (fb?.[1] === "higher") lo = Math.max(lo, g + 1);
    if (fb?.[1] === "lower") hi = Math.min(hi, g - 1);
  }
  s.consistent = s.consistentAt.filter(Boolean).length;
  return s;
}
