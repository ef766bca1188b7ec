/**
 * One GRPO group played directly: the small-scale entry point for notebooks and tests (the
 * trainer uses {@link collectGroups}, which adds concurrency limits and a failure policy).
 *
 * @module
 */

import { asMessageEnv } from "../envs/message_env.ts";
import type { AnyEnv } from "../envs/types.ts";
import type { Episode } from "../rl/types.ts";
import { type RolloutOptions, runEpisode, type Sampler } from "./episode.ts";

/**
 * A GRPO group: `groupSize` episodes from one reset (copies made with `spawn(true)`), played
 * concurrently; each episode samples with its own seed.
 *
 * @example
 * const episodes = await runGroup(() => make("game:GuessTheNumber-v0-easy"), 7, 4, sampler, {
 *   maxTokensPerTurn: 40, seed: 1,
 * });
 */
export async function runGroup(
  makeEnv: () => AnyEnv,
  envSeed: number,
  groupSize: number,
  sampler: Sampler,
  opts: RolloutOptions,
): Promise<Episode[]> {
  const parent = asMessageEnv(makeEnv());
  const { messages } = await parent.reset(envSeed);
  return await Promise.all(
    Array.from(
      { length: groupSize },
      (_, i) =>
        runEpisode(parent.spawn(true), messages, sampler, {
          ...opts,
          seed: opts.seed === undefined ? undefined : opts.seed + 1000 * i,
        }),
    ),
  );
}
