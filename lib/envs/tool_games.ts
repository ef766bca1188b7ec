/**
 * The games and the arithmetic task as tool environments: each move is a tool call with a JSON
 * Schema input (`guess {number}`, `move {from, to}`, `answer {answer}`, ...), turned into the
 * game's own `\boxed{…}` action, so rules and rewards stay the game's. Served by
 * `deno task envs serve` and registered in process as `tool:<Game>-v0-<level>`.
 *
 * Tasks: split `train` task i is the game reset with seed i; split `test` uses seeds derived
 * from the index with another salt, so the two splits hold different games.
 *
 * @module
 */

import { z } from "zod";
import { Arithmetic } from "./arithmetic.ts";
import { FifteenPuzzle } from "./fifteen_puzzle.ts";
import { GuessTheNumber } from "./guess_the_number.ts";
import { Hangman } from "./hangman.ts";
import { Mastermind } from "./mastermind.ts";
import { Minesweeper } from "./minesweeper.ts";
import { TowerOfHanoi } from "./tower_of_hanoi.ts";
import {
  defineTool,
  seededTasks,
  textBlock,
  textOutput,
  type ToolDef,
  type ToolEnvironment,
  type ToolOutput,
  toolSession,
} from "./tool_env.ts";
import type { SyncEnv } from "./types.ts";

/** Tasks per split of every game environment (seeds are cheap; the count only bounds indices). */
export const GAME_TASKS: { readonly train: 1000000; readonly test: 10000 } = {
  train: 1_000_000,
  test: 10_000,
} as const;
const TEST_SALT = 0x7e57;

/** One game being played through tools: the state every tool of a tool game acts on. */
export class ToolGamePlay {
  #over = false;
  /** A play of `game`, which the tools move. */
  constructor(readonly game: SyncEnv) {}

  /** Plays a text action; after the end, every call says so. */
  move(action: string): ToolOutput {
    if (this.#over) return textOutput("The game is over.", { finished: true });
    const r = this.game.step(action);
    this.#over = r.terminated || r.truncated;
    return textOutput(r.observation, {
      reward: r.reward,
      finished: this.#over,
      metadata: { reason: r.info.reason ?? null, turn: r.info.turn ?? null },
    });
  }
}

/** A tool game's move tool: its input becomes the move inside `\boxed{…}`. */
export type MoveTool = ToolDef<ToolGamePlay>;

/** A tool whose input becomes the text inside `\boxed{…}`. */
function moveTool<S extends z.ZodObject>(
  name: string,
  description: string,
  input: S,
  boxed: (args: z.infer<S>) => string,
): MoveTool {
  return defineTool(
    name,
    description,
    input,
    (play: ToolGamePlay, args) => play.move(`\\boxed{${boxed(args)}}`),
  );
}

const TOWER = z.enum(["A", "B", "C"]);
const CELL = z.object({
  row: z.number().int().describe("Row, from 0"),
  col: z.number().int().describe("Column, from 0"),
});

/** The move tools of each game. */
export const GAME_TOOLS: {
  readonly GuessTheNumber: readonly [MoveTool];
  readonly Mastermind: readonly [MoveTool];
  readonly Hangman: readonly [MoveTool];
  readonly TowerofHanoi: readonly [MoveTool];
  readonly Minesweeper: readonly [MoveTool, MoveTool];
  readonly FifteenPuzzle: readonly [MoveTool];
  readonly Arithmetic: readonly [MoveTool];
} = {
  GuessTheNumber: [
    moveTool(
      "guess",
      "Guess the hidden number.",
      z.object({ number: z.number().int().describe("Your guess") }),
      (a) => String(a.number),
    ),
  ],
  Mastermind: [
    moveTool(
      "guess",
      "Guess the hidden code.",
      z.object({ code: z.array(z.number().int()).describe("The code's digits, in order") }),
      (a) => a.code.join(" "),
    ),
  ],
  Hangman: [
    moveTool(
      "guess",
      "Guess one letter, or the whole word.",
      z.object({ letters: z.string().min(1).describe("A letter, or the whole word") }),
      (a) => a.letters,
    ),
  ],
  TowerofHanoi: [
    moveTool(
      "move",
      "Move the top disk of one tower onto another.",
      z.object({ from: TOWER.describe("Source tower"), to: TOWER.describe("Target tower") }),
      (a) => `${a.from} ${a.to}`,
    ),
  ],
  Minesweeper: [
    moveTool("reveal", "Reveal a cell.", CELL, (a) => `reveal ${a.row} ${a.col}`),
    moveTool("flag", "Flag a cell as a mine.", CELL, (a) => `flag ${a.row} ${a.col}`),
  ],
  FifteenPuzzle: [
    moveTool(
      "slide",
      "Slide the tile next to the gap into it.",
      z.object({
        direction: z.enum(["up", "down", "left", "right"]).describe(
          "up: the tile below the gap moves up; down, left and right likewise",
        ),
      }),
      (a) => a.direction,
    ),
  ],
  Arithmetic: [
    moveTool(
      "answer",
      "Give the final answer (one try).",
      z.object({ answer: z.union([z.number(), z.string()]).describe("The value") }),
      (a) => String(a.answer),
    ),
  ],
} as const satisfies Record<string, readonly MoveTool[]>;

/**
 * A game as a tool environment.
 *
 * @example
 * const env = gameToolEnvironment("guessthenumber-v0-easy", () => new GuessTheNumber("easy"),
 *   GAME_TOOLS.GuessTheNumber);
 */
export function gameToolEnvironment(
  name: string,
  make: () => SyncEnv,
  tools: readonly MoveTool[],
): ToolEnvironment {
  const sample = make();
  const calls = tools.map((t) => t.spec.name).join(", ");
  return {
    name,
    description: `${sample.id} as a tool environment (${calls})`,
    ...seededTasks(GAME_TASKS, TEST_SALT),
    tools: tools.map((t) => t.spec),
    // Calls with invalid input do not use up the game's turns.
    maxTurns: 2 * sample.maxTurns + 2,
    open: (task) => {
      const game = make();
      const { observation } = game.reset(Number(task.seed));
      const note = `\n\nPlay with tool calls (${calls}): put in a call's arguments what the ` +
        "rules say to write in \\boxed{}.";
      const play = new ToolGamePlay(game);
      return toolSession([textBlock(observation + note)], tools.map((t) => t.bind(play)));
    },
  };
}

const LEVELS = ["easy", "hard", "random"] as const;

/** Every built-in game and the arithmetic task, by registry id (`tool:<Game>-v0-<level>`). */
export function builtinGameToolEnvironments(): Record<string, ToolEnvironment> {
  const games: [string, (l: typeof LEVELS[number]) => SyncEnv, readonly MoveTool[]][] = [
    ["GuessTheNumber", (l) => new GuessTheNumber(l), GAME_TOOLS.GuessTheNumber],
    ["Mastermind", (l) => new Mastermind(l), GAME_TOOLS.Mastermind],
    ["Hangman", (l) => new Hangman(l), GAME_TOOLS.Hangman],
    ["TowerofHanoi", (l) => new TowerOfHanoi(l), GAME_TOOLS.TowerofHanoi],
    ["Minesweeper", (l) => new Minesweeper(l), GAME_TOOLS.Minesweeper],
    ["FifteenPuzzle", (l) => new FifteenPuzzle(l), GAME_TOOLS.FifteenPuzzle],
  ];
  const out: Record<string, ToolEnvironment> = {};
  for (const [game, make, tools] of games) {
    for (const l of LEVELS) {
      const id = `${game}-v0-${l}`;
      out[`tool:${id}`] = gameToolEnvironment(id.toLowerCase(), () => make(l), tools);
    }
  }
  for (const l of ["easy", "hard"] as const) {
    out[`tool:Arithmetic-v0-${l}`] = gameToolEnvironment(
      `arithmetic-v0-${l}`,
      () => new Arithmetic(l),
      GAME_TOOLS.Arithmetic,
    );
  }
  return out;
}
