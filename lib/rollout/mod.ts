/**
 * Rollouts: episodes of an environment played by a sampler, token-in/token-out
 * ({@link runEpisode}), and GRPO groups of them played with limits and a failure policy by
 * {@link collectGroups}, the one group runner of the trainer, the evaluator, the notebooks and
 * the benchmarks; {@link stepSeeds} names a training step's seeds.
 *
 * @module
 */

export * from "./episode.ts";
export * from "./collect.ts";
export * from "./seeds.ts";
export * from "./scripted.ts";
export * from "./tool_prompt.ts";
export type { Episode, EpisodeGroup, EpisodeStopReason, Turn } from "../rl/types.ts";
