/**
 * A run's HTML report: Plotly charts of its metrics (reward and success, loss, sampler/learner
 * drift, advantages, tokens, timings, staleness, and the judges' numbers when the method has
 * them), a timeline of its last steps, and the held-out evaluation of the base model against the
 * trained policy (`eval.json`) when the run has one, written as one self-contained `report.html`
 * in the run directory. With several runs, each chart compares them.
 *
 * @module
 */

import { basename, join } from "node:path";
import {
  metricLineFigure,
  type NamedRun,
  type PlotlyFigure,
  readMetricsJsonl,
  runsComparisonFigure,
  timelineFigure,
  type TimingSpan,
  writeFiguresHtml,
} from "../viz/mod.ts";
import { readJsonl } from "./run_log.ts";
import { type HeldOutEvaluation, heldOutLine, readEvaluation } from "./evaluate.ts";

/** The charts of a report: a title and the metric keys drawn together. */
const CHARTS: Array<{ title: string; keys: string[] }> = [
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

/** The figures of one run's metric rows (charts whose metrics were never logged are left out). */
export function runFigures(rows: Record<string, unknown>[]): PlotlyFigure[] {
  return CHARTS.flatMap(({ title, keys }) => {
    const logged = keys.filter((k) => rows.some((r) => typeof r[k] === "number"));
    return logged.length ? [metricLineFigure(rows, logged, { title })] : [];
  });
}

/** Bars of the base model's and the trained policy's success on the same held-out episodes. */
export function heldOutFigure(e: HeldOutEvaluation): PlotlyFigure {
  const policies = ["base", `trained (step ${e.step})`];
  const success = [e.base.success, e.trained.success];
  return {
    data: [{
      type: "bar",
      x: policies,
      y: success,
      text: success.map((s) => s.toFixed(2)),
      textposition: "auto",
      name: "success",
    }],
    layout: {
      title: { text: `Held-out success: ${e.episodes} episodes of ${e.env_id}` },
      yaxis: { title: { text: "success rate" }, range: [0, 1] },
    },
  };
}

/** One figure per chart metric, with a trace per run. */
export function comparisonFigures(runs: NamedRun[]): PlotlyFigure[] {
  return CHARTS.flatMap(({ keys }) => keys).flatMap((key) =>
    runs.some((r) => r.rows.some((row) => typeof row[key] === "number"))
      ? [runsComparisonFigure(runs, key)]
      : []
  );
}

/**
 * Writes `report.html` for a run directory (or, given several, a comparison into the first
 * directory as `comparison.html`), and returns its path.
 *
 * @example
 * const path = await writeRunReport(".tinkerbench/runs/rl-demo");
 */
export async function writeRunReport(...logDirs: string[]): Promise<string> {
  if (logDirs.length === 0) throw new Error("writeRunReport: give at least one run directory");
  const runs = await Promise.all(logDirs.map(async (dir) => ({
    name: basename(dir),
    rows: await readMetricsJsonl(join(dir, "metrics.jsonl")),
  })));
  if (runs.length === 1) {
    const spans = (await readJsonl(join(logDirs[0], "timing_spans.jsonl"))) as TimingSpan[];
    const evaluation = await readEvaluation(logDirs[0]);
    return await writeFiguresHtml(
      join(logDirs[0], "report.html"),
      `${runs[0].name}: ${runs[0].rows.length} steps`,
      [
        ...(evaluation ? [heldOutFigure(evaluation)] : []),
        ...runFigures(runs[0].rows),
        ...(spans.length ? [timelineFigure(spans)] : []),
      ],
      { notes: evaluation ? [heldOutLine(evaluation)] : [] },
    );
  }
  return await writeFiguresHtml(
    join(logDirs[0], "comparison.html"),
    runs.map((r) => r.name).join(" vs "),
    comparisonFigures(runs),
  );
}
