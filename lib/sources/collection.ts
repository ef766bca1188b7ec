/**
 * What every plan makes of a collection: group specs named by (step, group), the failed
 * episodes named by the specs they played, and the `rollout_errors/*` and sampler-version
 * metrics.
 *
 * @module
 */

import type { FailedEpisode } from "../trainer/mod.ts";
import { offPolicySteps } from "../rl/staleness.ts";
import type { EpisodeGroup } from "../rl/types.ts";
import type { CollectResult, GroupSpec } from "../rollout/mod.ts";
import { mean } from "../util/stats.ts";

/** The id of group `g` of `step` (`s000003-g001`), the rollout store's group id. */
export function groupId(step: number, g: number): string {
  return `s${String(step).padStart(6, "0")}-g${String(g).padStart(3, "0")}`;
}

/** `rollout_errors/*` and sampler-version metrics of a step's collections. */
export function collectionMetrics(
  results: CollectResult[],
  groups: EpisodeGroup[],
  step: number,
): Record<string, number> {
  const sum = (f: (r: CollectResult) => number) => results.reduce((a, r) => a + f(r), 0);
  const versions = groups.flatMap((g) =>
    g.episodes.flatMap((e) => e.turns.map((t) => t.samplerVersion))
  );
  const offPolicy = versions.map((v) => offPolicySteps(v, step));
  return {
    "rollout_errors/error": sum((r) => r.dropped.episodeError),
    "rollout_errors/timeout": sum((r) => r.dropped.episodeTimeout),
    "rollout_errors/total": sum((r) => r.errors.length),
    "rollout_errors/retries": sum((r) => r.retries),
    "rollout_errors/groups_skipped": sum((r) =>
      r.dropped.groupResetError + r.dropped.groupEpisodeFailed + r.dropped.groupTooFewEpisodes
    ),
    ...(versions.length
      ? {
        "sampling_client/step_max": Math.max(...versions),
        "sampling_client/step_min": Math.min(...versions),
        "sampling_client/step_mean": mean(versions),
        "async/off_policy_max": Math.max(...offPolicy),
        "async/off_policy_mean": mean(offPolicy),
      }
      : {}),
  };
}

/** The failed episodes of a collection, named by the specs they played. */
export function failedEpisodes(
  res: CollectResult,
  specs: GroupSpec[],
  envId = "",
): FailedEpisode[] {
  return res.failed.map((f) => {
    const spec = specs[f.groupIndex];
    return {
      groupId: spec.id ?? `g${f.groupIndex}`,
      envId: spec.tags?.[0] ?? envId,
      envSeed: spec.envSeed,
      tags: spec.tags ?? [],
      episode: f.episodeIndex ?? -1,
      error: f.message,
    };
  });
}
