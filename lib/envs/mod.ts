/**
 * Environments in GEM's shape and its registry ids.
 *
 * @module
 */

export * from "./types.ts";
export * from "./guess_the_number.ts";
export * from "./registry.ts";
