/**
 * What a run did not train, and when that means the run cannot work. Excluded groups and failed
 * episodes go to the rollout store beside the trained ones, each with its reason; a step with
 * nothing to train says why in one line; and {@link StepFailures} stops a run whose every
 * rollout failed in a step, or that trained nothing for `pipeline.max_steps_without_datums`
 * steps in a row (steps whose groups all solved their tasks aside: that is success, not a
 * failure), with one line naming the first error and the setting to change.
 *
 * @module
 */

import type { TrainConfig } from "../config/mod.ts";
import { ROLLOUT_SCHEMA_VERSION, type RolloutRecord, rolloutRecords } from "../rl/records.ts";
import type { ScoredGroup } from "../rl/types.ts";
import type { ExcludedGroup, FailedEpisode, StepGroups } from "./source.ts";
import { episodeSucceeded } from "./metrics.ts";
import type { UpdateResult } from "./update.ts";

/** A run that cannot do what was asked: the message names what and the setting to change. */
export class RunFailedError extends Error {
  override name = "RunFailedError";
}

/** Rollout-store records of excluded groups' episodes (`group_kept: false`, the reason). */
export function excludedGroupRecords(step: number, excluded: ExcludedGroup[]): RolloutRecord[] {
  return excluded.flatMap(({ group, reason }) => {
    // Never scored: each turn untrained, with no evidence.
    const scored: ScoredGroup = {
      group,
      kept: false,
      episodes: group.episodes.map((episode) => ({
        episode,
        turns: episode.turns.map((turn) => ({
          turn,
          evidence: { errors: [] },
          score: { reward: turn.reward, rlAdvantage: 0, dispatch: null, trained: false },
          advantages: null,
        })),
      })),
    };
    return rolloutRecords(step, [scored], episodeSucceeded)
      .map((r) => ({ ...r, excluded_reason: reason }));
  });
}

/** Rollout-store records of failed episodes (no turns kept; `error` says what went wrong). */
export function failedEpisodeRecords(step: number, failed: FailedEpisode[]): RolloutRecord[] {
  return failed.map((f) => ({
    schema_version: ROLLOUT_SCHEMA_VERSION,
    step,
    group_id: f.groupId,
    group_kept: false,
    excluded_reason: "episode failed",
    env_id: f.envId,
    env_seed: f.envSeed,
    tags: f.tags,
    episode: f.episode,
    total_reward: 0,
    success: false,
    stop_reason: "error",
    error: f.error,
    turns: [],
  }));
}

/**
 * Why a step trained nothing, in a few words, from what it played and what composition made of
 * it; null when it trained.
 */
export function nothingTrainedReason(taken: StepGroups, out: UpdateResult): string | null {
  if (out.datums > 0) return null;
  const failed = taken.failed?.length ?? 0;
  const episodes = taken.groups.reduce((n, g) => n + g.episodes.length, 0);
  if (episodes === 0 && !taken.excluded?.length) {
    return failed > 0
      ? `every rollout failed (${failed}; first: ${taken.failed![0].error})`
      : "no groups were played";
  }
  const parts: string[] = [];
  const excluded = new Map<string, number>();
  for (const x of taken.excluded ?? []) excluded.set(x.reason, (excluded.get(x.reason) ?? 0) + 1);
  for (const [reason, n] of excluded) {
    parts.push(`${n} group${n > 1 ? "s" : ""} excluded: ${reason}`);
  }
  const untrained = out.groups.flatMap((g) => g.episodes.flatMap((e) => e.turns));
  // OPD learns from a hint; an environment with no next observation gives none.
  if (untrained.length > 0 && untrained.every((t) => t.evidence.hint === null)) {
    parts.push(
      "no turn had a hint (opd learns from the next observation, and this environment gave " +
        "none worth a hint): use --method rl or combine, or scoring.hint_source judge",
    );
  }
  const stats = out.composed.advantageStats;
  if (stats && taken.groups.length > 0 && stats.fracAllGood + stats.fracAllBad >= 1 - 1e-9) {
    parts.push(
      allSolved(taken)
        ? "every group solved its task in all episodes (constant reward)"
        : "every group had one reward in all its episodes (constant groups: no signal)",
    );
  }
  const all = taken.groups.flatMap((g) => g.episodes);
  const parseErrors = all.filter((e) => e.stopReason === "parse_error").length;
  if (parseErrors > 0) parts.push(`${parseErrors}/${all.length} episodes ended in a parse error`);
  const errors = untrained.filter((t) => t.evidence.errors.length > 0);
  if (errors.length) {
    parts.push(`scoring failed on ${errors.length} turns (${errors[0].evidence.errors[0]})`);
  }
  if (parts.length === 0) parts.push("no turn had a nonzero advantage");
  return parts.join("; ");
}

/** Whether every group of the step solved its task in every episode (nothing to learn: fine). */
function allSolved(taken: StepGroups): boolean {
  const eps = taken.groups.flatMap((g) => g.episodes);
  return eps.length > 0 && eps.every(episodeSucceeded) && !taken.excluded?.length;
}

/** The failure rules of a run, fed each step (see the module doc). */
export class StepFailures {
  #idle = 0;
  readonly #limit: number;

  readonly #groupSize: number;

  constructor(cfg: TrainConfig) {
    this.#limit = cfg.pipeline.max_steps_without_datums;
    this.#groupSize = cfg.rollout.group_size;
  }

  /** What to change, for the reason the steps trained nothing. */
  #fix(reason: string): string {
    const raise = "(or raise pipeline.max_steps_without_datums)";
    if (reason.includes("constant groups")) {
      return `a group needs episodes that score differently: try a larger --group-size (now ` +
        `${this.#groupSize}), or partial-credit rewards (between 0 and 1 for a near miss) ` +
        `rather than all-or-nothing; ${raise}`;
    }
    if (reason.includes("no turn had a hint")) return raise;
    return `change the environment, model or rewards ${raise}`;
  }

  /**
   * Throws {@link RunFailedError} when the run should stop, given the step's groups and its
   * nothing-trained reason ({@link nothingTrainedReason}; null when it trained).
   */
  check(step: number, taken: StepGroups, reason: string | null): void {
    // Groups a mix left out as failing played nothing either.
    const played = taken.groups.length +
      (taken.excluded ?? []).filter((x) => !x.reason.startsWith("failing")).length;
    if (played === 0 && (taken.failed?.length ?? 0) > 0) {
      const first = taken.failed![0].error;
      throw new RunFailedError(
        `step ${step}: every rollout failed (${taken.failed!.length}); first error: ${first}` +
          settingHint(first),
      );
    }
    if (reason === null || allSolved(taken)) {
      this.#idle = 0;
      return;
    }
    if (++this.#idle >= this.#limit) {
      throw new RunFailedError(
        `steps ${step - this.#idle + 1}-${step} trained nothing: ${reason}; ${this.#fix(reason)}`,
      );
    }
  }
}

/** The setting a known rollout error points at. */
function settingHint(error: string): string {
  if (/context|too long|exceeds|max.?tokens|prompt length/i.test(error)) {
    return " (lower rollout.max_tokens_per_turn, --max-tokens, below the model's context length)";
  }
  if (/timed? ?out/i.test(error)) return " (raise rollout.timeout_s)";
  return " (see rollouts/ in the run directory for every episode's error)";
}
