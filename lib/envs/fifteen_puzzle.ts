/**
 * The Fifteen Puzzle (n×n sliding tiles) with GEM's rules: order the tiles 1..n²−1 row by row
 * with the gap last. The action is the last `\boxed{up|down|left|right}`: the tile below, above,
 * right of or left of the gap slides into it. Start boards are 100 random legal moves from the
 * goal (never undoing the previous one), so they are always solvable.
 *
 * Rewards: solving 1.0 (ends); moves and blocked moves 0; an unparseable action ends the game
 * with −0.1; at the turn limit the move's reward plus the fraction of cells already in place.
 *
 * @module
 */

import type { Rng } from "../util/random.ts";
import { lastBoxed, type Move, pick, REWARD, TurnGame } from "./game.ts";

/** Side length and turn limit. */
export interface FifteenPuzzleOptions {
  /** Side of the board (4: the 15-puzzle). */
  size: number;
  /** Turn limit of an episode. */
  maxTurns: number;
}

/** GEM's variants (`game:FifteenPuzzle-v0-*`). */
export const FIFTEEN_PUZZLE_VARIANTS = {
  easy: { size: 2, maxTurns: 10 },
  hard: { size: 4, maxTurns: 50 },
} as const satisfies Record<string, FifteenPuzzleOptions>;

/** The settings `-random` picks from at each reset, as in GEM. */
export const FIFTEEN_PUZZLE_RANDOM: readonly FifteenPuzzleOptions[] = [
  { size: 2, maxTurns: 10 },
  { size: 3, maxTurns: 20 },
  { size: 4, maxTurns: 50 },
];

/** A slide direction: the tile moves that way into the gap. */
export type Slide = "up" | "down" | "left" | "right";

/** Where the tile that slides comes from, relative to the gap. */
const FROM: Record<Slide, [number, number]> = {
  up: [1, 0],
  down: [-1, 0],
  left: [0, 1],
  right: [0, -1],
};
const UNDO: Record<Slide, Slide> = { up: "down", down: "up", left: "right", right: "left" };

/** The game's state between moves. */
export interface FifteenPuzzleState {
  /** Cells per side. */
  size: number;
  /** Row-major cells, 0 for the gap. */
  cells: number[];
}

/** Slides a tile into the gap; false (board unchanged) when no tile is on that side. */
export function slide(s: FifteenPuzzleState, dir: Slide): boolean {
  const gap = s.cells.indexOf(0);
  const r = Math.floor(gap / s.size) + FROM[dir][0], c = (gap % s.size) + FROM[dir][1];
  if (r < 0 || c < 0 || r >= s.size || c >= s.size) return false;
  s.cells[gap] = s.cells[r * s.size + c];
  s.cells[r * s.size + c] = 0;
  return true;
}

/** The Fifteen Puzzle environment. */
export class FifteenPuzzle extends TurnGame<FifteenPuzzleState> {
  /** Registry id of this variant. */
  readonly id: string;
  #variant: "easy" | "hard" | "random";

  /** A game of the given variant (`random` picks one at each reset). */
  constructor(variant: "easy" | "hard" | "random" = "easy") {
    super(
      variant === "random"
        ? FIFTEEN_PUZZLE_RANDOM[0].maxTurns
        : FIFTEEN_PUZZLE_VARIANTS[variant].maxTurns,
    );
    this.#variant = variant;
    this.id = `game:FifteenPuzzle-v0-${variant}`;
  }

  /** Builds the start state from a seeded generator. */
  protected init(rng: Rng): FifteenPuzzleState {
    const opts = this.#variant === "random"
      ? pick(rng, FIFTEEN_PUZZLE_RANDOM)
      : FIFTEEN_PUZZLE_VARIANTS[this.#variant];
    this.maxTurns = opts.maxTurns;
    const n = opts.size * opts.size;
    const s: FifteenPuzzleState = {
      size: opts.size,
      cells: Array.from({ length: n }, (_, i) => (i + 1) % n),
    };
    let last: Slide | null = null;
    // Keep scrambling past 100 moves if the walk happens to end on the goal (easy on 2×2).
    for (let i = 0; i < 100 || this.#solved(s); i++) {
      const dirs = (Object.keys(FROM) as Slide[]).filter((d) =>
        d !== (last && UNDO[last]) && slide(structuredClone(s), d)
      );
      last = pick(rng, dirs);
      slide(s, last);
    }
    return s;
  }

  /** The board, `__` for the gap. */
  render(): string {
    const { size, cells } = this.state!;
    const rows: string[] = [];
    for (let r = 0; r < size; r++) {
      rows.push(
        cells.slice(r * size, r * size + size).map((v) => (v ? String(v).padStart(2) : "__")).join(
          " ",
        ),
      );
    }
    return rows.join("\n");
  }

  /** The rules, the action format and the start state. */
  protected intro(): string {
    const n = this.state!.size ** 2 - 1;
    return `You are playing the ${n}-Puzzle. Arrange the tiles 1 to ${n} in ascending order, row ` +
      `by row, with the empty space (__) in the bottom-right corner. Each move slides a tile into ` +
      `the empty space: up (the tile below it), down (the tile above), left (the tile to its ` +
      `right), right (the tile to its left). You have ${this.maxTurns} turns. Answer with ` +
      `\\boxed{up}, \\boxed{down}, \\boxed{left} or \\boxed{right}.\n${this.render()}`;
  }

  /** Plays one action (the model's whole reply). */
  protected play(action: string): Move {
    const dir = lastBoxed(action)?.toLowerCase();
    if (dir !== "up" && dir !== "down" && dir !== "left" && dir !== "right") {
      return this.formatError("\\boxed{up}, \\boxed{down}, \\boxed{left} or \\boxed{right}");
    }
    if (!slide(this.state!, dir)) {
      return {
        observation: `Turn ${this.turn}: no tile can slide ${dir}.\n${this.render()}`,
        reward: REWARD.invalid,
        reason: "blocked",
      };
    }
    if (this.#solved(this.state!)) {
      return {
        observation: "Solved! The tiles are in order.",
        reward: REWARD.success,
        reason: "solved",
        end: true,
      };
    }
    return {
      observation: `Turn ${this.turn}: slid ${dir}.\n${this.render()}`,
      reward: REWARD.step,
      reason: "moved",
    };
  }

  /** Partial credit at the turn limit (GEM's). */
  protected override timeoutReward(moveReward: number): number {
    const { cells } = this.state!;
    const inPlace = cells.filter((v, i) => v === (i + 1) % cells.length).length;
    return moveReward + inPlace / cells.length;
  }

  #solved(s: FifteenPuzzleState): boolean {
    return s.cells.every((v, i) => v === (i + 1) % s.cells.length);
  }

  /** An unreset game of the same variant. */
  protected fresh(): FifteenPuzzle {
    return new FifteenPuzzle(this.#variant);
  }
}
