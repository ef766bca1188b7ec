/**
 * Per-step metrics with tinker-cookbook's names: `env/all/...` for rollouts (plus
 * `env/<env id>/...` when a batch mixes environments), `optim/kl_sample_train_v1|v2` and
 * `optim/entropy` for policy drift, `advantage/...`, `time/...`, `progress/...`.
 *
 * @module
 */

import type { AdvantageStats } from "../advantages/mod.ts";
import type { Datum, ForwardBackwardOutput } from "../protocol/mod.ts";
import { type Episode, type EpisodeGroup, isSolved } from "../rl/types.ts";
import { mean } from "../util/stats.ts";
import { ENV_METRIC, envMetric, METRIC } from "../rundir/mod.ts";

/** Whether an episode solved its task: its rewards reach 1 (a GEM game's win). */
export function episodeSucceeded(e: Episode): boolean {
  return isSolved(e.totalReward);
}

/**
 * Rollout metrics of a batch of groups, over all and per environment when they mix (by the
 * group's first tag, else its env id).
 */
export function rolloutMetrics(groups: EpisodeGroup[]): Record<string, number> {
  const m: Record<string, number> = {};
  const byEnv = new Map<string, Episode[][]>();
  // A group's first tag names its environment in a mix (its config name); else its env id.
  for (const g of groups) {
    const key = g.tags[0] ?? g.envId;
    byEnv.set(key, [...(byEnv.get(key) ?? []), g.episodes]);
  }
  Object.assign(m, envMetrics("all", groups.map((g) => g.episodes)));
  if (byEnv.size > 1) { for (const [id, gs] of byEnv) Object.assign(m, envMetrics(id, gs)); }
  return m;
}

function envMetrics(env: string, groups: Episode[][]): Record<string, number> {
  const key = (k: string) => envMetric(env, k);
  const eps = groups.flat();
  const turns = eps.flatMap((e) => e.turns);
  const acTokens = turns.reduce((n, t) => n + t.actionTokens.length, 0);
  // Observation tokens a turn adds to the conversation (its prompt minus what came before).
  let obTokens = 0;
  for (const e of eps) {
    let prev = 0;
    for (const t of e.turns) {
      obTokens += t.observationTokens.length - prev;
      prev = t.observationTokens.length + t.actionTokens.length;
    }
  }
  const m: Record<string, number> = {
    [key(ENV_METRIC.reward)]: mean(eps.map((e) => e.totalReward)),
    [key(ENV_METRIC.success)]: mean(eps.map((e) => (episodeSucceeded(e) ? 1 : 0))),
    [key(ENV_METRIC.turnsPerEpisode)]: turns.length / (eps.length || 1),
    [key(ENV_METRIC.acTokensPerTurn)]: acTokens / (turns.length || 1),
    [key(ENV_METRIC.obTokensPerTurn)]: obTokens / (turns.length || 1),
    [key(ENV_METRIC.totalEpisodes)]: eps.length,
    [key(ENV_METRIC.totalTurns)]: turns.length,
    [key(ENV_METRIC.totalAcTokens)]: acTokens,
    [key(ENV_METRIC.totalObTokens)]: obTokens,
  };
  // Episodes of an environment that declares tools count their calls (unset otherwise).
  if (eps.some((e) => e.toolCalls !== undefined)) {
    const perEpisode = (f: (e: Episode) => number | undefined) => mean(eps.map((e) => f(e) ?? 0));
    m[key(ENV_METRIC.toolCallsPerEpisode)] = perEpisode((e) => e.toolCalls);
    m[key(ENV_METRIC.invalidToolCallsPerEpisode)] = perEpisode((e) => e.invalidToolCalls);
    m[key(ENV_METRIC.failedToolCallsPerEpisode)] = perEpisode((e) => e.failedToolCalls);
  }
  for (const reason of ["completed", "max_turns", "max_tokens", "parse_error", "error"]) {
    m[key(`${ENV_METRIC.stop}/${reason}`)] = mean(
      eps.map((e) => (e.stopReason === reason ? 1 : 0)),
    );
  }
  let mixed = 0, good = 0, bad = 0;
  for (const g of groups) {
    const rs = g.map((e) => e.totalReward);
    if (rs.some((r) => r !== rs[0])) mixed++;
    else if (rs[0] > 0) good++;
    else bad++;
  }
  const n = groups.length || 1;
  m[key(ENV_METRIC.fracMixed)] = mixed / n;
  m[key(ENV_METRIC.fracAllGood)] = good / n;
  m[key(ENV_METRIC.fracAllBad)] = bad / n;
  return m;
}

/**
 * Drift between the sampler and the learner on the trained tokens (advantage ≠ 0):
 * v1 = mean(q − p), v2 = mean((q − p)² / 2), with q the sampler's and p the learner's
 * log-probs, and entropy = −mean(q) (GEM's sampled-token estimate).
 */
export function klMetrics(datums: Datum[], out: ForwardBackwardOutput): Record<string, number> {
  let n = 0, v1 = 0, v2 = 0, ent = 0;
  datums.forEach((d, i) => {
    const q = d.loss_fn_inputs.logprobs?.data ?? [];
    const a = d.loss_fn_inputs.advantages?.data ?? [];
    const p = out.loss_fn_outputs[i]?.logprobs?.data ?? [];
    for (let t = 0; t < q.length; t++) {
      if (a[t] === 0 || p[t] === undefined) continue;
      const diff = q[t] - p[t];
      v1 += diff;
      v2 += 0.5 * diff * diff;
      ent -= q[t];
      n++;
    }
  });
  if (n === 0) return {};
  return {
    [METRIC.klV1]: v1 / n,
    [METRIC.klV2]: v2 / n,
    [METRIC.entropy]: ent / n,
    [METRIC.trainedTokens]: n,
  };
}

/** The advantage pipeline's stats, as metrics. */
export function advantageMetrics(s: AdvantageStats | null): Record<string, number> {
  if (!s) return {};
  return {
    [METRIC.advantageMean]: s.mean,
    [METRIC.advantageStd]: s.std,
    [METRIC.advantageMin]: s.min,
    [METRIC.advantageMax]: s.max,
    [METRIC.droppedGroups]: s.droppedGroups,
    [METRIC.downsampledEpisodes]: s.downsampledEpisodes,
  };
}
