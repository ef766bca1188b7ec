/**
 * What feeds the RL step loop (./loop.ts): a {@link GroupSource} hands over each step's groups as
 * {@link StepGroups}, with what it left out and why. The trainer imports no source: they live
 * above it and implement this contract. Environments and mixes played in `sync`/`stream` or
 * `async` mode (lib/sources/) and the proxy's sessions (lib/proxy/source.ts) are sources;
 * docs/sources.md writes a new one.
 *
 * @module
 */

import type { EpisodeGroup } from "../rl/types.ts";
import type { EvidenceByTurn } from "../scoring/mod.ts";
import type { SamplingClient } from "../tinker/mod.ts";
import type { UpdateResult } from "./update.ts";

/** A group left out before training, and why. */
export interface ExcludedGroup {
  /** The group left out. */
  group: EpisodeGroup;
  /** Why, in a few words. */
  reason: string;
}

/** An episode that failed (its error), for the rollout store. */
export interface FailedEpisode {
  /** The group the episode belonged to. */
  groupId: string;
  /** Its environment. */
  envId: string;
  /** The seed its environment was reset with (null: none). */
  envSeed: number | null;
  /** The group's tags. */
  tags: string[];
  /** The episode's index in its group. */
  episode: number;
  /** What failed. */
  error: string;
}

/** A wall-clock span of a step (ms since the run started), for the report's timeline. */
export interface Span {
  /** What the span timed (`rollout`, `train`, …). */
  name: string;
  /** Its start, in ms since the run started. */
  start: number;
  /** Its end, in ms since the run started. */
  end: number;
}

/** What a source hands the loop for one step. */
export interface StepGroups {
  /** The groups to train, in order. */
  groups: EpisodeGroup[];
  /** Evidence the source gathered already (the proxy scores turns as they complete). */
  evidence?: EvidenceByTurn;
  /** Groups left out before training (a mix's failing or constant groups), with the reason. */
  excluded?: ExcludedGroup[];
  /** Episodes that failed (an error, a timeout), with their errors. */
  failed?: FailedEpisode[];
  /** The source's metrics (`rollout_errors/*`, `proxy/*`, per-environment rates…). */
  metrics: Record<string, number>;
  /** The source's timed spans of the step. */
  spans: Span[];
}

/** Where each step's groups come from. */
export interface GroupSource {
  /**
   * The groups of `step`; `onGroup` sees each as soon as it is ready (stream minibatches). Null
   * when the signal aborted before the step's groups were in (the step is not trained).
   */
  take(
    step: number,
    onGroup?: (g: EpisodeGroup) => void,
    signal?: AbortSignal,
  ): Promise<StepGroups | null>;
  /** A new sampler (weights after `version` optimizer steps). */
  setSampler(sampler: SamplingClient, version: number): void;
  /** Records what the step made of the source's groups (the proxy's session records). */
  afterStep?(step: number, update: UpdateResult): Promise<void>;
  /** Ends work in flight (its results are dropped). */
  close(o: { interrupted: boolean }): Promise<void>;
}
