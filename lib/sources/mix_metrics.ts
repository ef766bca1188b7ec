/**
 * Metrics of a multi-environment step with OpenReward's trainer's names: `num_groups`,
 * `num_excluded_groups`, `rollout/reward/{mean,min,max,std,count}`,
 * `rollout/response_tokens/{…}`, `rollout/stop_reason/<reason>/{count,frac}` and
 * `rollout/env/<name>/reward/{…}`, plus tool-call counts and per-environment group outcomes
 * (`env/<name>/...`; the episode metrics per environment come from `rolloutMetrics`).
 *
 * @module
 */

import { sampleStd } from "../util/stats.ts";
import type { Episode, EpisodeStopReason } from "../rl/types.ts";

/** What happened to one group of a step. */
export interface GroupOutcome {
  /** Its environment's name. */
  env: string;
  /** Its episodes (failed ones left out by the rollout are not here) with their rewards. */
  episodes: { e: Episode; r: number | null }[];
  /** Episodes that failed (left out by the rollout, or without tokens or reward). */
  failed: number;
  /** Why the group was left out (null: kept). */
  excluded: "failing" | "constant" | null;
}

/** OpenReward's names of stop reasons. */
const STOP_NAMES: Record<EpisodeStopReason, string> = {
  completed: "reached_terminal_state",
  max_tokens: "max_tokens",
  max_turns: "max_turns",
  parse_error: "parse_error",
  error: "error",
};

/** `{mean, min, max, std, count}` under a prefix (sample std, as Python's `statistics`). */
export function stats(prefix: string, xs: number[]): Record<string, number> {
  if (xs.length === 0) return { [`${prefix}/count`]: 0 };
  return {
    [`${prefix}/mean`]: xs.reduce((a, b) => a + b, 0) / xs.length,
    [`${prefix}/min`]: Math.min(...xs),
    [`${prefix}/max`]: Math.max(...xs),
    [`${prefix}/std`]: sampleStd(xs),
    [`${prefix}/count`]: xs.length,
  };
}

/**
 * The step's metrics over every episode played (rewards of excluded groups included, so an
 * environment whose groups are all constant still reports its reward).
 */
export function mixMetrics(outcomes: GroupOutcome[]): Record<string, number> {
  const m: Record<string, number> = {};
  const kept = outcomes.filter((o) => !o.excluded);
  m.num_groups = kept.length;
  m.num_excluded_groups = outcomes.length - kept.length;
  m["excluded_groups/failing"] = outcomes.filter((o) => o.excluded === "failing").length;
  m["excluded_groups/constant_reward"] = outcomes.filter((o) => o.excluded === "constant").length;
  m.num_rollouts = kept.reduce((n, o) => n + o.episodes.filter((x) => x.r !== null).length, 0);
  m.num_failed_rollouts = outcomes.reduce((n, o) => n + o.failed, 0);
  Object.assign(m, episodeStats("rollout", outcomes.flatMap((o) => o.episodes)));
  const names = [...new Set(outcomes.map((o) => o.env))];
  for (const name of names) {
    const mine = outcomes.filter((o) => o.env === name);
    const eps = mine.flatMap((o) => o.episodes);
    Object.assign(m, stats(`rollout/env/${name}/reward`, rewards(eps)));
    m[`env/${name}/groups`] = mine.length;
    m[`env/${name}/excluded_groups`] = mine.filter((o) => o.excluded).length;
    m[`env/${name}/failed_rollouts`] = mine.reduce((n, o) => n + o.failed, 0);
    m[`env/${name}/tool_calls_per_episode`] = perEpisode(eps, (e) => e.toolCalls ?? 0);
    m[`env/${name}/failed_tool_calls_per_episode`] = perEpisode(eps, (e) => e.failedToolCalls ?? 0);
    for (const [reason, count] of stopCounts(eps)) {
      m[`env/${name}/stop_reason/${reason}/frac`] = count / eps.length;
    }
  }
  return m;
}

function episodeStats(prefix: string, eps: GroupOutcome["episodes"]): Record<string, number> {
  const m: Record<string, number> = {
    ...stats(`${prefix}/reward`, rewards(eps)),
    ...stats(`${prefix}/response_tokens`, eps.map((x) => x.e.sampledTokens ?? 0)),
    ...stats(`${prefix}/tool_calls`, eps.map((x) => x.e.toolCalls ?? 0)),
    ...stats(`${prefix}/failed_tool_calls`, eps.map((x) => x.e.failedToolCalls ?? 0)),
    ...stats(`${prefix}/invalid_tool_calls`, eps.map((x) => x.e.invalidToolCalls ?? 0)),
  };
  for (const [reason, count] of stopCounts(eps)) {
    m[`${prefix}/stop_reason/${reason}/count`] = count;
    m[`${prefix}/stop_reason/${reason}/frac`] = count / eps.length;
  }
  return m;
}

function rewards(eps: GroupOutcome["episodes"]): number[] {
  return eps.filter((x) => x.r !== null).map((x) => x.r!);
}

function perEpisode(eps: GroupOutcome["episodes"], f: (e: Episode) => number): number {
  return eps.length ? eps.reduce((n, x) => n + f(x.e), 0) / eps.length : 0;
}

function stopCounts(eps: GroupOutcome["episodes"]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { e } of eps) {
    const name = STOP_NAMES[e.stopReason];
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}
