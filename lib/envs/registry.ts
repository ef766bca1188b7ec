/**
 * The environment registry, with GEM's ids: `make("game:GuessTheNumber-v0-easy")`.
 *
 * @module
 */

import { closest } from "../util/similar.ts";
import type { AnyEnv, SyncEnv } from "./types.ts";
import { GuessTheNumber } from "./guess_the_number.ts";
import { Mastermind } from "./mastermind.ts";
import { Hangman } from "./hangman.ts";
import { TowerOfHanoi } from "./tower_of_hanoi.ts";
import { Minesweeper } from "./minesweeper.ts";
import { FifteenPuzzle } from "./fifteen_puzzle.ts";
import { Arithmetic } from "./arithmetic.ts";
import { EvenFirstByte } from "./even_byte.ts";
import type { ToolEnvironment } from "./tool_env.ts";
import { builtinGameToolEnvironments } from "./tool_games.ts";
import { localTasks, ToolTaskEnv } from "./tool_task_env.ts";
import { whoDunIt } from "./whodunit.ts";
import { wordProblems } from "./word_problems.ts";

const LEVELS = ["easy", "hard", "random"] as const;

/** Every game under GEM's `game:<Name>-v0-<level>` ids, plus the offline arithmetic task. */
const BUILTINS: Record<string, () => SyncEnv> = Object.fromEntries([
  ...LEVELS.flatMap((l) => [
    [`game:GuessTheNumber-v0-${l}`, () => new GuessTheNumber(l)],
    [`game:Mastermind-v0-${l}`, () => new Mastermind(l)],
    [`game:Hangman-v0-${l}`, () => new Hangman(l)],
    [`game:TowerofHanoi-v0-${l}`, () => new TowerOfHanoi(l)],
    [`game:Minesweeper-v0-${l}`, () => new Minesweeper(l)],
    [`game:FifteenPuzzle-v0-${l}`, () => new FifteenPuzzle(l)],
  ]),
  ["math:Arithmetic-v0-easy", () => new Arithmetic("easy")],
  ["math:Arithmetic-v0-hard", () => new Arithmetic("hard")],
  ["debug:EvenFirstByte-v0", () => new EvenFirstByte()],
]);

/**
 * Tool environments by registry id: the games and the arithmetic task with move tools
 * (`tool:GuessTheNumber-v0-easy`, ...), WhoDunIt and the word problems. `make` plays them in
 * process; `deno task envs serve` serves them over the Open Reward Standard.
 */
const TOOL_ENVIRONMENTS: Record<string, ToolEnvironment> = {
  ...builtinGameToolEnvironments(),
  "tool:WhoDunIt-v0-easy": whoDunIt("easy"),
  "tool:WhoDunIt-v0-hard": whoDunIt("hard"),
  "tool:WordProblems-v0": wordProblems(),
};

/** The built-in tool environments are for the one local model that calls tools. */
const TOOL_MODELS = { train: ["local/tools"] } as const;

const toolEnv = (id: string, env: ToolEnvironment, builtin = false) => () =>
  new ToolTaskEnv(localTasks(env), { id, ...(builtin ? { localModels: TOOL_MODELS } : {}) });

const FACTORIES: Record<string, () => AnyEnv> = {
  ...BUILTINS,
  ...Object.fromEntries(
    Object.entries(TOOL_ENVIRONMENTS).map(([id, e]) => [id, toolEnv(id, e, true)]),
  ),
};

/**
 * Registers a tool environment (the Open Reward Standard's shape) under an id: `make(id)` plays
 * it in process, and `deno task envs serve` serves it under its ORS name.
 *
 * @example
 * registerToolEnvironment("custom:Echo-v0", echoEnvironment);
 */
export function registerToolEnvironment(id: string, env: ToolEnvironment): void {
  const clash = Object.values(TOOL_ENVIRONMENTS).find((e) => e.name === env.name);
  if (clash) throw new Error(`a tool environment named ${JSON.stringify(env.name)} exists`);
  register(id, toolEnv(id, env));
  TOOL_ENVIRONMENTS[id] = env;
}

/** The registered tool environments by registry id. */
export function listToolEnvironments(): Readonly<Record<string, ToolEnvironment>> {
  return { ...TOOL_ENVIRONMENTS };
}

/**
 * Registers an environment (text or message-level) under a new id (as GEM's `register`), so
 * that configs, the trainer and the scripts can `make` it. Registering a taken id is an error.
 *
 * @example
 * register("custom:MyTask-v0", () => new MyTask());
 */
export function register(id: string, factory: () => AnyEnv): void {
  if (FACTORIES[id]) throw new Error(`environment ${JSON.stringify(id)} is already registered`);
  FACTORIES[id] = factory;
}

/** An id that is not registered. */
export class UnknownEnvError extends Error {
  /** The error's name, for logs. */
  override name = "UnknownEnvError";
}

/** The registered ids. */
export function listEnvs(): string[] {
  return Object.keys(FACTORIES);
}

/**
 * A new environment by id. An unknown id is an error with the nearest ids (GEM's README uses
 * the unregistered `game:GuessTheNumber-v0`), or every known one when none is near.
 */
export function make(id: string): AnyEnv {
  const factory = FACTORIES[id];
  if (factory) return factory();
  const close = closest(id, listEnvs());
  throw new UnknownEnvError(
    `unknown environment ${JSON.stringify(id)}. ` +
      (close.length ? `Did you mean ${close.join(" or ")}?` : `Known: ${listEnvs().join(", ")}`),
  );
}

/**
 * A built-in environment (the games, the arithmetic task), typed as answering synchronously; a
 * user-registered id is an error, since its environment may answer with promises.
 */
export function makeBuiltin(id: string): SyncEnv {
  const factory = BUILTINS[id];
  if (factory) return factory();
  make(id); // throws the registry's error for unknown ids
  throw new Error(`${id} is not a built-in environment`);
}
