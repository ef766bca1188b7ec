/**
 * Minesweeper with GEM's rules: reveal every safe cell without hitting a mine. Mines are laid
 * after the first reveal, away from its 3×3 neighbourhood, so the first move is always safe and
 * opens an area. The action is the last `\boxed{reveal R C}` or `\boxed{flag R C}` (0-based).
 *
 * Rewards: a reveal earns `newly revealed cells / safe cells` (a full clear sums to 1.0 and ends
 * the game); hitting a mine 0 and ends it; flags, out-of-bounds cells, revealing a revealed or
 * flagged cell and unknown verbs 0; an unparseable action ends the game with −0.1.
 *
 * @module
 */

import { Rng } from "../util/random.ts";
import { lastBoxed, type Move, REWARD, TurnGame } from "./game.ts";

/** Board size, mine count and turn limit. */
export interface MinesweeperOptions {
  /** Rows of the board. */
  rows: number;
  /** Columns of the board. */
  cols: number;
  /** Mines on the board. */
  mines: number;
  /** Turn limit of an episode. */
  maxTurns: number;
}

/** GEM's variants (`game:Minesweeper-v0-*`); `random` is an n×n board, n in 5..8, n²/5 mines. */
export const MINESWEEPER_VARIANTS = {
  easy: { rows: 5, cols: 5, mines: 5, maxTurns: 25 },
  hard: { rows: 8, cols: 8, mines: 12, maxTurns: 64 },
} as const satisfies Record<string, MinesweeperOptions>;

/** The game's state between moves. */
export interface MinesweeperState {
  /** The game's settings. */
  opts: MinesweeperOptions;
  /** −1 a mine, else the adjacent mine count; all 0 until the first reveal lays the mines. */
  grid: number[][];
  /** Which cells are revealed. */
  revealed: boolean[][];
  /** Which cells are flagged. */
  flagged: boolean[][];
  /** Whether the first reveal has laid the mines. */
  laid: boolean;
  /** Seeded generator state for laying mines at the first reveal. */
  rng: [number, number, number, number];
}

const NEIGHBOURS = [[-1, -1], [-1, 0], [-1, 1], [0, -1], [0, 1], [1, -1], [1, 0], [1, 1]];

/** The Minesweeper environment. */
export class Minesweeper extends TurnGame<MinesweeperState> {
  /** Registry id of this variant. */
  readonly id: string;
  #variant: "easy" | "hard" | "random";

  /** A game of the given variant (`random` picks one at each reset). */
  constructor(variant: "easy" | "hard" | "random" = "easy") {
    super(variant === "random" ? 25 : MINESWEEPER_VARIANTS[variant].maxTurns);
    this.#variant = variant;
    this.id = `game:Minesweeper-v0-${variant}`;
  }

  /** Builds the start state from a seeded generator. */
  protected init(rng: Rng): MinesweeperState {
    let opts: MinesweeperOptions;
    if (this.#variant === "random") {
      const n = 5 + rng.int(4);
      opts = { rows: n, cols: n, mines: Math.floor(n * n / 5), maxTurns: n * n };
    } else opts = MINESWEEPER_VARIANTS[this.#variant];
    this.maxTurns = opts.maxTurns;
    const grid = (v: boolean) => Array.from({ length: opts.rows }, () => Array(opts.cols).fill(v));
    return {
      opts,
      grid: grid(false).map((r) => r.map(() => 0)),
      revealed: grid(false),
      flagged: grid(false),
      laid: false,
      rng: rng.state(),
    };
  }

  /** The board as the agent sees it: `.` hidden, `F` flagged, digits for revealed cells. */
  render(): string {
    const s = this.state!;
    const header = "   " +
      Array.from({ length: s.opts.cols }, (_, c) => String(c).padStart(2)).join("");
    const rows = s.grid.map((row, r) =>
      String(r).padStart(2) + " " +
      row.map((v, c) => (s.revealed[r][c] ? String(v) : s.flagged[r][c] ? "F" : ".").padStart(2))
        .join("")
    );
    return [header, ...rows].join("\n");
  }

  /** The rules, the action format and the start state. */
  protected intro(): string {
    const { rows, cols, mines } = this.state!.opts;
    return `You are playing Minesweeper on a ${rows}x${cols} grid with ${mines} mines. Reveal ` +
      `every cell that is not a mine. A revealed number counts the mines around it. You have ` +
      `${this.maxTurns} turns. Act with \\boxed{reveal R C} or \\boxed{flag R C} (row and column ` +
      `from 0), e.g. \\boxed{reveal 2 2}.\n${this.render()}`;
  }

  /** Plays one action (the model's whole reply). */
  protected play(action: string): Move {
    const s = this.state!;
    const m = lastBoxed(action)?.match(/^([a-zA-Z]+)\s+(\d+)\s+(\d+)$/);
    if (!m) return this.formatError("\\boxed{reveal R C} or \\boxed{flag R C}");
    const verb = m[1].toLowerCase(), r = Number(m[2]), c = Number(m[3]);
    const say = (text: string, reward: number, reason: string): Move => ({
      observation: `Turn ${this.turn}: ${text}\n${this.render()}`,
      reward,
      reason,
    });
    if (r >= s.opts.rows || c >= s.opts.cols) {
      return say(`(${r}, ${c}) is outside the grid.`, REWARD.invalid, "out_of_bounds");
    }
    if (verb === "flag") {
      if (s.revealed[r][c]) {
        return say(`(${r}, ${c}) is already revealed.`, REWARD.invalid, "already_revealed");
      }
      s.flagged[r][c] = !s.flagged[r][c];
      return say(`${s.flagged[r][c] ? "Flagged" : "Unflagged"} (${r}, ${c}).`, REWARD.step, "flag");
    }
    if (verb !== "reveal") {
      return say(`Unknown action ${verb}: use reveal or flag.`, REWARD.invalid, "unknown_verb");
    }
    if (!s.laid) this.#layMines(r, c);
    if (s.grid[r][c] === -1) {
      return {
        observation: `Boom! (${r}, ${c}) is a mine. Game over.`,
        reward: REWARD.fail,
        reason: "mine",
        end: true,
      };
    }
    if (s.revealed[r][c] || s.flagged[r][c]) {
      return say(
        `(${r}, ${c}) is already revealed or flagged.`,
        REWARD.invalid,
        "already_revealed",
      );
    }
    const safe = s.opts.rows * s.opts.cols - s.opts.mines;
    const reward = this.#flood(r, c) / safe;
    const hidden = s.revealed.flat().filter((v) => !v).length;
    if (hidden === s.opts.mines) {
      return {
        observation: "Cleared! Every safe cell is revealed.",
        reward,
        reason: "cleared",
        end: true,
      };
    }
    return say(`Revealed (${r}, ${c}).`, reward, "revealed");
  }

  #layMines(r0: number, c0: number): void {
    const s = this.state!;
    const rng = Rng.fromState(s.rng);
    const spots: [number, number][] = [];
    for (let r = 0; r < s.opts.rows; r++) {
      for (let c = 0; c < s.opts.cols; c++) {
        if (Math.abs(r - r0) > 1 || Math.abs(c - c0) > 1) spots.push([r, c]);
      }
    }
    for (let i = 0; i < s.opts.mines; i++) {
      const [r, c] = spots.splice(rng.int(spots.length), 1)[0];
      s.grid[r][c] = -1;
    }
    for (let r = 0; r < s.opts.rows; r++) {
      for (let c = 0; c < s.opts.cols; c++) {
        if (s.grid[r][c] !== -1) {
          s.grid[r][c] = NEIGHBOURS.filter(([dr, dc]) => s.grid[r + dr]?.[c + dc] === -1).length;
        }
      }
    }
    s.laid = true;
  }

  /** Reveals a cell and, through zeros, its neighbours; returns how many were newly revealed. */
  #flood(r0: number, c0: number): number {
    const s = this.state!;
    const stack = [[r0, c0]];
    let n = 0;
    while (stack.length) {
      const [r, c] = stack.pop()!;
      if (s.revealed[r]?.[c] !== false || s.flagged[r][c] || s.grid[r][c] === -1) continue;
      s.revealed[r][c] = true;
      n++;
      if (s.grid[r][c] === 0) { for (const [dr, dc] of NEIGHBOURS) stack.push([r + dr, c + dc]); }
    }
    return n;
  }

  /** An unreset game of the same variant. */
  protected fresh(): Minesweeper {
    return new Minesweeper(this.#variant);
  }
}
