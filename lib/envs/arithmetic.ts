/**
 * A single-turn arithmetic task with a verifier, the offline stand-in for GEM's `math:*`
 * datasets: evaluate an integer expression such as `(17 - 4) * 6 + 9` and put the result in
 * `\boxed{}`.
 *
 * Rewards (GEM's MathEnv with its format-error penalty on): the last boxed answer equal to the
 * value 1.0, a wrong answer 0, no boxed answer (or one that is not a number) −0.1. Every step
 * ends the episode.
 *
 * @module
 */

import type { Rng } from "../util/random.ts";
import { lastBoxed, type Move, REWARD, TurnGame } from "./game.ts";

/** Operand range and operator count of a variant. */
export interface ArithmeticOptions {
  /** Largest operand. */
  maxOperand: number;
  /** Number of operators in an expression. */
  ops: number;
}

/** The variants: `easy` two operators on 1..20, `hard` four on 1..99. */
export const ARITHMETIC_VARIANTS = {
  easy: { maxOperand: 20, ops: 2 },
  hard: { maxOperand: 99, ops: 4 },
} as const satisfies Record<string, ArithmeticOptions>;

/**
 * The number a boxed answer denotes, or null. Accepts integers, decimals, thousands separators,
 * `a/b` and `\frac{a}{b}` (also `\dfrac`), optionally wrapped in `$…$`, so a correct answer is not
 * marked wrong for its spelling.
 */
export function parseAnswer(text: string): number | null {
  let t = text.replace(/\$/g, "").replace(/\\[!,; ]/g, "").replace(/\s+/g, "");
  t = t.replace(/^\\d?frac\{([^{}]+)\}\{([^{}]+)\}$/, "$1/$2");
  if (/^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$/.test(t)) t = t.replace(/,/g, "");
  const frac = t.match(/^([+-]?\d+)\/([+-]?\d+)$/);
  if (frac) return Number(frac[2]) === 0 ? null : Number(frac[1]) / Number(frac[2]);
  return /^[+-]?(\d+\.?\d*|\.\d+)$/.test(t) ? Number(t) : null;
}

/** Whether an action's last boxed answer equals `expected` (null when there is no number). */
export function verify(action: string, expected: number): boolean | null {
  const boxed = lastBoxed(action);
  const value = boxed === null ? null : parseAnswer(boxed);
  if (value === null) return null;
  return Math.abs(value - expected) <= 1e-9 * Math.max(1, Math.abs(expected));
}

/** The game's state between moves. */
export interface ArithmeticState {
  /** The expression asked. */
  question: string;
  /** Its value. */
  answer: number;
}

/** Builds a random expression; returns its text and value. Products keep a factor small. */
export function randomExpression(rng: Rng, opts: ArithmeticOptions): ArithmeticState {
  const num = () => 1 + rng.int(opts.maxOperand);
  let text = String(num()), value = Number(text), lastOp = "";
  for (let i = 0; i < opts.ops; i++) {
    const op = "+-*"[rng.int(3)];
    const b = op === "*" ? 2 + rng.int(8) : num();
    // Parenthesise the running expression so evaluation is left to right whatever the operator.
    if (op === "*" && (lastOp === "+" || lastOp === "-")) text = `(${text})`;
    text = `${text} ${op} ${b}`;
    value = op === "+" ? value + b : op === "-" ? value - b : value * b;
    lastOp = op;
  }
  return { question: text, answer: value };
}

/** The arithmetic environment (`math:Arithmetic-v0-easy`, `-hard`). */
export class Arithmetic extends TurnGame<ArithmeticState> {
  /** Registry id of this variant. */
  readonly id: string;
  #variant: "easy" | "hard";

  /** A game of the given variant. */
  constructor(variant: "easy" | "hard" = "easy") {
    super(1);
    this.#variant = variant;
    this.id = `math:Arithmetic-v0-${variant}`;
  }

  /** Builds the start state from a seeded generator. */
  protected init(rng: Rng): ArithmeticState {
    return randomExpression(rng, ARITHMETIC_VARIANTS[this.#variant]);
  }

  /** The rules, the action format and the start state. */
  protected intro(): string {
    return `Compute ${this.state!.question}. Think step by step, then put the final answer in ` +
      `\\boxed{}, e.g. \\boxed{42}.`;
  }

  /** Plays one action (the model's whole reply). */
  protected play(action: string): Move {
    const ok = verify(action, this.state!.answer);
    if (ok === null) return this.formatError("the number in \\boxed{}, e.g. \\boxed{42}");
    return ok
      ? { observation: "Correct.", reward: REWARD.success, reason: "correct", end: true }
      : {
        observation: `Wrong: the answer is ${this.state!.answer}.`,
        reward: 0,
        reason: "wrong",
        end: true,
      };
  }

  /** An unreset game of the same variant. */
  protected fresh(): Arithmetic {
    return new Arithmetic(this.#variant);
  }
}
