/**
 * Advantages: from the rewards of groups of episodes to one advantage per turn (see
 * `./pipeline.ts` for the modes and the peer systems that use them).
 *
 * @module
 */

export * from "./downsample.ts";
export * from "./pipeline.ts";
export * from "./shaping.ts";
export * from "./untrained.ts";
