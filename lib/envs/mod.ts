/**
 * Environments in GEM's shape and its registry ids.
 *
 * @module
 */

export * from "./types.ts";
export * from "./local_models.ts";
export * from "./guess_the_number.ts";
export * from "./game.ts";
export * from "./mastermind.ts";
export * from "./hangman.ts";
export * from "./tower_of_hanoi.ts";
export * from "./minesweeper.ts";
export * from "./fifteen_puzzle.ts";
export * from "./arithmetic.ts";
export * from "./words.ts";
export * from "./wrappers.ts";
export * from "./registry.ts";
export * from "./message_env.ts";
export * from "./modules.ts";
export * from "./even_byte.ts";
export * from "./tool_env.ts";
export * from "./tool_task_env.ts";
export * from "./tool_games.ts";
export * from "./whodunit.ts";
export * from "./whodunit_detective.ts";
export * from "./word_problems.ts";
