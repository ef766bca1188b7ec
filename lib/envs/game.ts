/**
 * Shared machinery for turn-based text games: seeding, turn counting, the turn limit and `spawn`.
 * Each game only says how to start (`init`) and how one parsed move plays out (`play`), so the
 * GEM conventions (format error ends the game with −0.1, turn limit truncates) live in one place.
 *
 * @module
 */

import { Rng } from "../util/random.ts";
import type { StepResult, SyncEnv } from "./types.ts";

/** GEM's reward constants (`gem/utils/constants.py`, `LanguageGameReward`). */
export const REWARD = {
  /** Solving the task. */
  success: 1,
  /** A step that neither wins nor loses. */
  step: 0,
  /** Losing, e.g. revealing a mine. GEM keeps it at 0 so losing is no worse than stalling. */
  fail: 0,
  /** A well-formed but illegal move (out of range, repeated, blocked). */
  invalid: 0,
  /** An action that cannot be parsed at all; it also ends the episode. */
  formatError: -0.1,
} as const;

/** What a game's `play` reports for one move. */
export interface Move {
  /** What the player sees after the move. */
  observation: string;
  /** The move's reward. */
  reward: number;
  /** Why the move scored what it did, e.g. `correct`, `invalid_move`; goes to `info.reason`. */
  reason: string;
  /** The game ended by its rules (won or lost). */
  end?: boolean;
}

/**
 * The text of the last complete `\boxed{…}` in an action, trimmed, or null. Braces are matched,
 * so `\boxed{\frac{1}{2}}` gives `\frac{1}{2}`; GEM likewise takes the last boxed answer, since
 * models often box a draft before the final one.
 */
export function lastBoxed(text: string): string | null {
  let found: string | null = null;
  for (let i = text.indexOf("\\boxed{"); i >= 0; i = text.indexOf("\\boxed{", i + 1)) {
    let depth = 0;
    for (let j = i + 6; j < text.length; j++) {
      if (text[j] === "{") depth++;
      else if (text[j] === "}" && --depth === 0) {
        found = text.slice(i + 7, j).trim();
        break;
      }
    }
  }
  return found;
}

/**
 * Base class of the games. `S` is the game's state; it must survive `structuredClone`, because
 * `spawn(true)` copies it (a GRPO group replays one start state in several envs).
 */
export abstract class TurnGame<S> implements SyncEnv {
  /** Registry id, e.g. `game:Mastermind-v0-easy`. */
  abstract readonly id: string;
  /** Turn limit of the current episode (random variants pick it at reset). */
  maxTurns: number;
  /** The game state; null before the first reset. */
  protected state: S | null = null;
  /** Turns taken in this episode. */
  protected turn = 0;
  #done = false;

  /** A game whose episodes end after `maxTurns` turns. */
  constructor(maxTurns: number) {
    this.maxTurns = maxTurns;
  }

  /** Builds the start state from a seeded generator; random variants set `maxTurns` here too. */
  protected abstract init(rng: Rng): S;
  /** The first observation: rules, action format and the start state. */
  protected abstract intro(): string;
  /** Plays one action on `this.state`. The action text is the model's whole reply. */
  protected abstract play(action: string): Move;
  /** An unreset env of the same variant, for `spawn`. */
  protected abstract fresh(): TurnGame<S>;
  /** The reward when the turn limit is hit; GEM gives some games partial credit here. */
  protected timeoutReward(moveReward: number): number {
    return moveReward;
  }

  /** Starts an episode; without a seed it draws one, so only seeded episodes are reproducible. */
  reset(seed?: number): { observation: string; info: Record<string, unknown> } {
    const rng = new Rng(seed ?? Math.floor(Math.random() * 2 ** 31));
    this.turn = 0;
    this.#done = false;
    this.state = this.init(rng);
    return { observation: this.intro(), info: { maxTurns: this.maxTurns } };
  }

  /**
   * One turn. Turn-limit endings are `truncated` (not `terminated`), so value bootstrapping can
   * tell a cut-off from a real ending; GEM sets both flags there, and loops that stop on
   * `terminated || truncated` behave the same.
   */
  step(action: string): StepResult {
    if (this.state === null) throw new Error(`${this.id}: call reset() before step()`);
    if (this.#done) throw new Error(`${this.id}: the episode is over; call reset()`);
    this.turn++;
    const move = this.play(action);
    const info = { reason: move.reason, turn: this.turn };
    if (move.end) {
      this.#done = true;
      return { ...move, terminated: true, truncated: false, info };
    }
    if (this.turn >= this.maxTurns) {
      this.#done = true;
      return {
        observation: `${move.observation}\nYou have reached the maximum number of turns.`,
        reward: this.timeoutReward(move.reward),
        terminated: false,
        truncated: true,
        info,
      };
    }
    return { ...move, terminated: false, truncated: false, info };
  }

  /** A copy of this env; with `sameState`, mid-episode state included. */
  spawn(sameState = false): TurnGame<S> {
    const env = this.fresh();
    if (sameState && this.state !== null) {
      env.maxTurns = this.maxTurns;
      env.state = structuredClone(this.state);
      env.turn = this.turn;
      env.#done = this.#done;
    }
    return env;
  }

  /** The move GEM makes of an unparseable action: the episode ends with −0.1. */
  protected formatError(expected: string): Move {
    return {
      observation: `No valid action found: answer with ${expected}. Game over.`,
      reward: REWARD.formatError,
      reason: "format_error",
      end: true,
    };
  }
}

/** Picks one of a variant table's entries for `-random` ids. */
export function pick<T>(rng: Rng, options: readonly T[]): T {
  return options[rng.int(options.length)];
}
