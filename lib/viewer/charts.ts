/**
 * The summary charts of the run viewer: which metrics are drawn together, under which readable
 * names, for one run or several side by side. A comparison takes runs of any method and source:
 * a run that never logged a metric is left out of that chart and the chart says so, rather than
 * the whole report failing on the first metric one run lacks.
 *
 * @module
 */

import {
  metricLineFigure,
  type NamedRun,
  type PlotlyFigure,
  runsComparisonFigure,
} from "../viz/mod.ts";
import type { HeldOutEvaluation } from "../rundir/mod.ts";

/** The charts of a report: a title and the metric keys drawn together. */
export const CHARTS: Array<{ title: string; keys: string[] }> = [
  { title: "Reward", keys: ["env/all/reward/total"] },
  { title: "Success rate", keys: ["env/all/success"] },
  { title: "Loss (sum over tokens)", keys: ["train/loss:sum"] },
  { title: "Sampler vs learner", keys: ["optim/kl_sample_train_v1", "optim/kl_sample_train_v2"] },
  { title: "Entropy of sampled tokens", keys: ["optim/entropy"] },
  {
    title: "Advantages",
    keys: ["advantage/mean", "advantage/std", "advantage/min", "advantage/max"],
  },
  {
    title: "Groups",
    keys: [
      "env/all/by_group/frac_mixed",
      "env/all/by_group/frac_all_good",
      "env/all/by_group/frac_all_bad",
    ],
  },
  { title: "Tokens per turn", keys: ["env/all/ac_tokens_per_turn", "env/all/ob_tokens_per_turn"] },
  { title: "Turns per episode", keys: ["env/all/turns_per_episode"] },
  {
    title: "Judges",
    keys: ["score/prm_eval_score", "score/hint_accepted_frac", "score/opd_advantage_mean"],
  },
  { title: "Time per step (s)", keys: ["time/sample", "time/score", "time/train", "time/step"] },
  {
    title: "Sampler staleness (steps off-policy)",
    keys: ["async/off_policy_max", "async/off_policy_mean", "async/requeued"],
  },
];

/** Readable names of the charted metrics (legends, axes, comparison titles). */
export const METRIC_LABELS: Record<string, string> = {
  "env/all/reward/total": "episode reward (mean)",
  "env/all/success": "success rate",
  "train/loss:sum": "loss (sum over tokens)",
  "optim/kl_sample_train_v1": "KL sampler→learner (k1)",
  "optim/kl_sample_train_v2": "KL sampler→learner (k2)",
  "optim/entropy": "entropy of sampled tokens",
  "advantage/mean": "advantage mean",
  "advantage/std": "advantage std",
  "advantage/min": "advantage min",
  "advantage/max": "advantage max",
  "env/all/by_group/frac_mixed": "groups with mixed rewards",
  "env/all/by_group/frac_all_good": "groups all solved",
  "env/all/by_group/frac_all_bad": "groups all failed",
  "env/all/ac_tokens_per_turn": "action tokens per turn",
  "env/all/ob_tokens_per_turn": "observation tokens per turn",
  "env/all/turns_per_episode": "turns per episode",
  "score/prm_eval_score": "PRM judge score",
  "score/hint_accepted_frac": "hints accepted",
  "score/opd_advantage_mean": "OPD advantage (teacher − student)",
  "time/sample": "sampling (s)",
  "time/score": "scoring (s)",
  "time/train": "training (s)",
  "time/step": "whole step (s)",
  "async/off_policy_max": "steps off-policy (max)",
  "async/off_policy_mean": "steps off-policy (mean)",
  "async/requeued": "groups requeued",
};

/** A metric's readable name: its label, else its key without the `env/all/` prefix. */
export function metricLabel(key: string): string {
  return METRIC_LABELS[key] ?? key.replace(/^env\/all\//, "").replace(/[/_]/g, " ");
}

const hasMetric = (rows: Record<string, unknown>[], key: string) =>
  rows.some((r) => typeof r[key] === "number");

/** The figures of one run's metric rows (charts whose metrics were never logged are left out). */
export function runFigures(rows: Record<string, unknown>[]): PlotlyFigure[] {
  return CHARTS.flatMap(({ title, keys }) => {
    const logged = keys.filter((k) => hasMetric(rows, k));
    return logged.length ? [metricLineFigure(rows, logged, { title, labels: METRIC_LABELS })] : [];
  });
}

/** Comparison figures and what they left out. */
export interface Comparison {
  /** The figures. */
  figures: PlotlyFigure[];
  /** One line per metric some run did not log, e.g. `advantage std: not logged by opd-run`. */
  notes: string[];
}

/**
 * One figure per charted metric that any run logged, with a trace per run that logged it; a run
 * without the metric is named under the chart's title and in `notes`.
 */
export function comparisonFigures(runs: NamedRun[]): Comparison {
  const notes: string[] = [];
  const figures = CHARTS.flatMap(({ title, keys }) =>
    keys.flatMap((key) => {
      const having = runs.filter((r) => hasMetric(r.rows, key));
      if (having.length === 0) return [];
      const label = metricLabel(key);
      const missing = runs.filter((r) => !having.includes(r)).map((r) => r.name);
      const name = keys.length === 1 ? title : `${title}: ${label}`;
      if (missing.length) notes.push(`${name}: not logged by ${missing.join(", ")}`);
      const fig = runsComparisonFigure(having, key, {
        title: missing.length ? `${name}<br><sup>not logged by ${missing.join(", ")}</sup>` : name,
        labels: METRIC_LABELS,
      });
      return [fig];
    })
  );
  return { figures, notes };
}

/** A run's held-out evaluation, named for the chart. */
export interface NamedEvaluation {
  /** The run's name. */
  name: string;
  /** Its held-out evaluation. */
  evaluation: HeldOutEvaluation;
}

/**
 * The base model's and the trained policy's held-out success, side by side for every run that
 * has an evaluation (one pair of bars per run).
 */
export function heldOutFigure(evals: NamedEvaluation[]): PlotlyFigure {
  const hover = "%{y:.3f} on %{customdata[0]} episodes of %{customdata[1]}<extra></extra>";
  if (evals.length === 1) {
    const e = evals[0].evaluation;
    const y = [e.base.success, e.trained.success];
    return {
      data: [{
        type: "bar",
        x: ["base model", `trained policy (step ${e.step})`],
        y,
        text: y.map((s) => s.toFixed(2)),
        textposition: "auto",
        marker: { color: ["#9aa5b1", "#2166ac"] },
        customdata: [[e.base.episodes, e.env_id], [e.trained.episodes, e.env_id]],
        hovertemplate: hover,
      }],
      layout: {
        title: { text: `Held-out success: ${e.episodes} episodes of ${e.env_id}` },
        yaxis: { title: { text: "success rate" }, range: [0, 1] },
      },
    };
  }
  const bars = (which: "base" | "trained") => {
    const y = evals.map(({ evaluation: e }) => e[which].success);
    return {
      type: "bar",
      name: which === "base" ? "base model" : "trained policy",
      x: evals.map(({ name, evaluation: e }) => `${name} (${e.step} steps)`),
      y,
      text: y.map((s) => s.toFixed(2)),
      textposition: "auto",
      customdata: evals.map(({ evaluation: e }) => [e[which].episodes, e.env_id]),
      hovertemplate: hover,
    };
  };
  return {
    data: [bars("base"), bars("trained")],
    layout: {
      title: { text: "Held-out success: base model vs trained policy, per run" },
      barmode: "group",
      yaxis: { title: { text: "success rate" }, range: [0, 1] },
    },
  };
}
