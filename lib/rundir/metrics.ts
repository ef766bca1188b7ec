/**
 * The metrics rows of `metrics.jsonl` and their keys, with tinker-cookbook's names: the trainer
 * writes rows under these keys, and every reader (the run API, the viewer, the benches, the
 * command line's summary) looks them up by the same constants, never by a spelled-out string.
 *
 * @module
 */

import { runPath } from "./files.ts";
import { readJsonl } from "./jsonl.ts";

/** One step's metrics row: `metrics.jsonl`'s rows. */
export type StepMetrics = { step: number } & Record<string, number>;

/**
 * The keys of an environment's episode metrics, after its prefix (`env/all/…` over every
 * group, `env/<name>/…` per environment of a mix): see {@link envMetric}.
 */
export const ENV_METRIC = {
  reward: "reward/total",
  success: "success",
  turnsPerEpisode: "turns_per_episode",
  acTokensPerTurn: "ac_tokens_per_turn",
  obTokensPerTurn: "ob_tokens_per_turn",
  totalEpisodes: "total_episodes",
  totalTurns: "total_turns",
  totalAcTokens: "total_ac_tokens",
  totalObTokens: "total_ob_tokens",
  toolCallsPerEpisode: "tool_calls_per_episode",
  invalidToolCallsPerEpisode: "invalid_tool_calls_per_episode",
  failedToolCallsPerEpisode: "failed_tool_calls_per_episode",
  /** Followed by `/<stop reason>`: the fraction of episodes that stopped so. */
  stop: "stop",
  fracMixed: "by_group/frac_mixed",
  fracAllGood: "by_group/frac_all_good",
  fracAllBad: "by_group/frac_all_bad",
} as const;

/**
 * An environment metric's key: `envMetric("all", ENV_METRIC.reward)` is `env/all/reward/total`.
 *
 * @example
 * row[envMetric("WordProblems", ENV_METRIC.success)]; // a mix entry's success rate
 */
export function envMetric(env: string, key: string): string {
  return `env/${env}/${key}`;
}

/** The metric keys of a step's row that readers look up, by what they measure. */
export const METRIC = {
  /** Mean total reward of the step's episodes. */
  reward: envMetric("all", ENV_METRIC.reward),
  /** Fraction of the step's episodes solved. */
  success: envMetric("all", ENV_METRIC.success),
  totalEpisodes: envMetric("all", ENV_METRIC.totalEpisodes),
  parseErrors: envMetric("all", `${ENV_METRIC.stop}/parse_error`),
  /** The loss summed over the step's trained tokens. */
  loss: "train/loss:sum",
  /** Datums trained in the step. */
  datums: "train/datums",
  /** Seconds of the whole step, of its sampling, and of its training. */
  stepTime: "time/step",
  sampleTime: "time/sample",
  trainTime: "time/train",
  klV1: "optim/kl_sample_train_v1",
  klV2: "optim/kl_sample_train_v2",
  entropy: "optim/entropy",
  trainedTokens: "optim/trained_tokens",
  advantageMean: "advantage/mean",
  advantageStd: "advantage/std",
  advantageMin: "advantage/min",
  advantageMax: "advantage/max",
  droppedGroups: "advantage/dropped_groups",
  downsampledEpisodes: "advantage/downsampled_episodes",
  /** Proxy runs: the step's turns and their mean reward. */
  proxyTurns: "proxy/turns",
  proxyReward: "proxy/reward/mean",
} as const;

/**
 * A run's metrics rows (none yet: empty). A line that is not a JSON object with a numeric `step`
 * is reported to `skipped` and left out when it is given, else an error.
 */
export function readStepMetrics(dir: string, skipped?: string[]): Promise<StepMetrics[]> {
  return readJsonl<StepMetrics>(runPath(dir, "metrics"), {
    skipped,
    check: (r) =>
      typeof r === "object" && r !== null && typeof (r as { step?: unknown }).step === "number"
        ? { ok: true, row: r as StepMetrics }
        : { ok: false, why: "not a metrics row (no step)" },
  });
}
