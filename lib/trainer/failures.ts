/**
 * What a run did not train, and when that means the run cannot work. Excluded groups and failed
 * episodes go to the rollout store beside the trained ones, each with its reason; a step with
 * nothing to train says why in one line; and {@link StepFailures} stops a run whose every
 * rollout failed in a step, or that trained nothing for `pipeline.max_steps_without_datums`
 * steps in a row (steps whose groups all solved their tasks aside: that is success, not a
 * failure), with one line naming the first error and the setting to change. It also stops an
 * opd/combine run whose teacher is worse than the student (lib/scoring/teacher_check.ts).
 *
 * @module
 */

import { explainStep } from "../advantages/untrained.ts";
import { ROLLOUT_SCHEMA_VERSION, type RolloutRecord, rolloutRecords } from "../rl/records.ts";
import type { ScoredGroup } from "../rl/types.ts";
import { teacherGap, WorseTeacherCheck } from "../scoring/teacher_check.ts";
import type { ExcludedGroup, FailedEpisode, StepGroups } from "./source.ts";
import { episodeSucceeded } from "./metrics.ts";
import type { UpdateResult } from "./update.ts";

/** A run that cannot do what was asked: the message names what and the setting to change. */
export class RunFailedError extends Error {
  /** The error's name, for logs. */
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
          score: { rlReward: turn.reward, rlAdvantage: 0, dispatch: null, trained: false },
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
 * Why a step trained nothing, in a few words ({@link explainStep}, the viewer's explanation
 * too), from the step's rollout-store records; null when it trained.
 */
export function nothingTrainedReason(taken: StepGroups, out: UpdateResult): string | null {
  if (out.datums > 0) return null;
  return explainStep([
    ...rolloutRecords(0, out.groups, episodeSucceeded),
    ...excludedGroupRecords(0, taken.excluded ?? []),
    ...failedEpisodeRecords(0, taken.failed ?? []),
  ]) ?? "no turn had a nonzero advantage";
}

/**
 * Whether every episode the step played solved its task (nothing to learn: fine). The groups a
 * mix left out were played too: a solved group has a constant reward, so a mix excludes it.
 */
function allSolved(taken: StepGroups): boolean {
  const groups = [...taken.groups, ...(taken.excluded ?? []).map((x) => x.group)];
  const eps = groups.flatMap((g) => g.episodes);
  return eps.length > 0 && !taken.failed?.length && eps.every(episodeSucceeded);
}

/** The failure rules' settings, resolved from the config by `prepareRun`. */
export interface FailureSettings {
  /** Steps in a row with nothing to train before the run stops (`pipeline.max_steps_without_datums`). */
  maxStepsWithoutDatums: number;
  /** The worse-teacher rule (`scoring.worse_teacher_frac`, `scoring.worse_teacher_steps`). */
  worseTeacher: { negativeFrac: number; steps: number };
  /** Episodes per group, named in the fix for constant groups. */
  groupSize: number;
}

/** The failure rules of a run, fed each step (see the module doc). */
export class StepFailures {
  #idle = 0;
  readonly #limit: number;
  readonly #teacher: WorseTeacherCheck;
  readonly #groupSize: number;

  /** The policy with `s`'s settings. */
  constructor(s: FailureSettings) {
    this.#limit = s.maxStepsWithoutDatums;
    this.#teacher = new WorseTeacherCheck(s.worseTeacher);
    this.#groupSize = s.groupSize;
  }

  /** What to change, for the reason the steps trained nothing. */
  #fix(reason: string): string {
    const raise = "(or raise pipeline.max_steps_without_datums)";
    if (reason.startsWith("no hint")) {
      return `use --method rl, or a judge's hints (scoring.opd_hint judge) ${raise}`;
    }
    if (reason.includes("constant groups")) {
      return `a group needs episodes that score differently: try a larger --group-size (now ` +
        `${this.#groupSize}), or partial-credit rewards (between 0 and 1 for a near miss) ` +
        `rather than all-or-nothing; ${raise}`;
    }
    return `change the environment, model or rewards ${raise}`;
  }

  /**
   * Throws {@link RunFailedError} when the run should stop, given the step's groups, its
   * nothing-trained reason ({@link nothingTrainedReason}; null when it trained) and its scored
   * groups (for the worse-teacher rule of opd and combine, lib/scoring/teacher_check.ts).
   */
  check(step: number, taken: StepGroups, reason: string | null, scored: ScoredGroup[] = []): void {
    const worse = this.#teacher.observe(step, teacherGap(scored));
    if (worse !== null) throw new RunFailedError(worse);
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
