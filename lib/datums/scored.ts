/**
 * Datums of scored episodes: each turn's tokens with the advantages composition gave it, through
 * the one trajectory builder.
 *
 * @module
 */

import type { Datum } from "../protocol/mod.ts";
import type { Episode, ScoredEpisode, ScoredGroup } from "../rl/types.ts";
import { trajectoryToDatums, type TurnTokens } from "./trajectory.ts";

/** A scored episode's turns for the datum builder; untrained turns get advantage 0. */
export function scoredEpisodeTurns(episode: ScoredEpisode): TurnTokens[] {
  return episode.turns.map(({ turn, advantages }) => ({
    observation: turn.observationTokens,
    action: turn.actionTokens,
    logprobs: turn.logprobs,
    advantage: advantages ?? 0,
    train: advantages !== null,
  }));
}

/**
 * The datums of a batch: every episode of a kept group with at least one trained turn (an
 * episode with nothing to train would only cost a forward-backward pass).
 *
 * @example
 * const { groups } = composeAdvantages(episodeGroups, evidence, settings);
 * await training.forwardBackward(scoredGroupsToDatums(groups), "importance_sampling");
 */
export function scoredGroupsToDatums(groups: ScoredGroup[]): Datum[] {
  return groups.filter((g) => g.kept).flatMap((g) =>
    g.episodes
      .filter((e) => e.turns.some((t) => t.advantages !== null))
      .flatMap((e) => trajectoryToDatums(scoredEpisodeTurns(e)))
  );
}

/** An episode's turns with one advantage for the whole episode (notebooks, tests). */
export function episodeTurnTokens(episode: Episode, advantage: number): TurnTokens[] {
  return episode.turns.map((t) => ({
    observation: t.observationTokens,
    action: t.actionTokens,
    logprobs: t.logprobs,
    advantage,
  }));
}
