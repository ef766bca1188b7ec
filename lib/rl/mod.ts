/**
 * The RL vocabulary (turn, episode, group, scored records) and the rollout store's schema.
 *
 * @module
 */

export * from "./types.ts";
export * from "./records.ts";
export * from "./text.ts";
export * from "./staleness.ts";
