/**
 * The environment interface, in GEM's shape: text observations in, text actions out, a reward
 * per step, and `spawn` to clone an environment (in the same state, for GRPO groups).
 *
 * @module
 */

/** What `step` returns. */
export interface StepResult {
  /** What the agent sees next (feedback and, for board games, the board). */
  observation: string;
  /** This step's reward; GEM games shape it so an episode's rewards sum to at most 1. */
  reward: number;
  /** The episode ended by the rules (won, lost, invalid action). */
  terminated: boolean;
  /** The episode was cut off (turn limit). */
  truncated: boolean;
  /** Diagnostics: `reason` (why the step scored what it did) and `turn`; not for the agent. */
  info: Record<string, unknown>;
}

/** A text environment. */
export interface Env {
  /** Registry id, e.g. `game:GuessTheNumber-v0-easy`. */
  readonly id: string;
  /** Most steps an episode can take. */
  readonly maxTurns: number;
  /** Starts an episode; the same seed gives the same episode. */
  reset(seed?: number): { observation: string; info: Record<string, unknown> };
  /** Applies the agent's text action. */
  step(action: string): StepResult;
  /**
   * A new environment of the same id; with `sameState`, a deep copy in this one's current state,
   * so a GRPO group can play several completions from one start. Without it, call `reset` first.
   */
  spawn(sameState?: boolean): Env;
}

/** The integer in the last `\boxed{…}` of a text, or null when there is none. */
export function lastBoxedInteger(text: string): number | null {
  const m = [...text.matchAll(/\\boxed\{\s*([+-]?\d+)\s*\}/g)].at(-1);
  return m ? Number(m[1]) : null;
}
