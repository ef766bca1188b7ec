/**
 * Rollouts: episodes of an environment played by a sampler, token-in/token-out, one GRPO group
 * at a time ({@link runGroup}) or many at once with limits and a failure policy
 * ({@link collectGroups}).
 *
 * @module
 */

export * from "./episode.ts";
export * from "./group.ts";
export * from "./collect.ts";
export * from "./scripted.ts";
export type { Episode, EpisodeGroup, EpisodeStopReason, Turn } from "../rl/types.ts";
