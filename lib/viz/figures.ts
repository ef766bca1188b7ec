/**
 * Plotly figures as plain JSON (`{ data, layout }` in Plotly's schema): no plotting library
 * runs in Deno, the figure is data that a Jupyter frontend (mimetype
 * `application/vnd.plotly.v1+json`) or an HTML page with plotly.js draws. The figures are the
 * RL views a run is debugged with: metric curves, per-token advantages along a response,
 * reward spread within GRPO groups, and sampler vs learner log-probs.
 *
 * @module
 */

import type { DataFrame } from "./frames.ts";
import type { Episode } from "../rollout/mod.ts";

/** One Plotly trace (`type` is `scatter`, `heatmap`, `box`, ...). */
export interface PlotlyTrace {
  /** The trace type. */
  type: string;
  /** Plotly's other trace attributes. */
  [key: string]: unknown;
}

/** A Plotly figure. */
export interface PlotlyFigure {
  /** The traces. */
  data: PlotlyTrace[];
  /** Plotly's layout. */
  layout: Record<string, unknown>;
}

/** Options of the metric figures: the x column, a title, and readable names of the keys. */
export interface MetricFigureOptions {
  /** The column drawn along x (default `step`). */
  x?: string;
  title?: string;
  /** Readable names of metric keys, for legends and axes (default: the keys). */
  labels?: Record<string, string>;
}

/**
 * Curves of logged metrics against `x` (default `step`), one trace per key. Rows where a key
 * is missing or not a number are skipped, since metrics logged every n steps leave gaps.
 */
export function metricLineFigure(
  rows: Record<string, unknown>[],
  keys: string[],
  { x = "step", title, labels = {} }: MetricFigureOptions = {},
): PlotlyFigure {
  const data = keys.map((key) => ({ ...line(rows, key, x), name: labels[key] ?? key }));
  return {
    data,
    layout: {
      title: { text: title ?? keys.map((k) => labels[k] ?? k).join(", ") },
      xaxis: xAxis(x, data),
      yaxis: { title: { text: keys.length === 1 ? labels[keys[0]] ?? keys[0] : "value" } },
    },
  };
}

/** One run's metric rows, named for the legend. */
export interface NamedRun {
  /** The legend name. */
  name: string;
  /** The run's metric rows (`metrics.jsonl`). */
  rows: Record<string, unknown>[];
}

/**
 * One metric of several runs on one axis (a trace per run), to compare runs. Every run must
 * have logged the metric; leave out the ones that did not (and say so) before calling.
 */
export function runsComparisonFigure(
  runs: NamedRun[],
  key: string,
  { x = "step", title, labels = {} }: MetricFigureOptions = {},
): PlotlyFigure {
  const data = runs.map((r) => ({ ...line(r.rows, key, x), name: r.name }));
  return {
    data,
    layout: {
      title: { text: title ?? labels[key] ?? key },
      xaxis: xAxis(x, data),
      yaxis: { title: { text: labels[key] ?? key } },
      showlegend: true,
    },
  };
}

/**
 * The x axis of metric curves: a step axis ticks at whole steps only (1, 2, 5, 10… apart, at
 * most about ten ticks), since Plotly's automatic ticks put a 2-step run at 1.2, 1.4….
 */
function xAxis(x: string, traces: PlotlyTrace[]): Record<string, unknown> {
  const xs = traces.flatMap((t) => t.x as number[]);
  if (x !== "step" || xs.length === 0 || !xs.every(Number.isInteger)) {
    return { title: { text: x } };
  }
  const lo = Math.min(...xs), hi = Math.max(...xs);
  const dtick = [1, 2, 5].flatMap((m) => [1, 10, 100, 1000, 10000].map((p) => m * p))
    .sort((a, b) => a - b).find((d) => (hi - lo) / d <= 10) ?? Math.ceil((hi - lo) / 10);
  return {
    title: { text: x },
    tickmode: "linear",
    tick0: 0,
    dtick,
    tickformat: "d",
    range: [lo - 0.5, hi + 0.5],
  };
}

function line(rows: Record<string, unknown>[], key: string, x: string): PlotlyTrace {
  const points = rows.flatMap((r, i) => {
    const y = r[key];
    if (typeof y !== "number") return [];
    const xv = r[x];
    return [[typeof xv === "number" ? xv : i, y]];
  });
  if (rows.length > 0 && points.length === 0) {
    const known = [...new Set(rows.flatMap((r) => Object.keys(r)))].join(", ");
    throw new Error(`metric ${JSON.stringify(key)} is in no row (logged keys: ${known})`);
  }
  return {
    type: "scatter",
    mode: "lines+markers",
    x: points.map((p) => p[0]),
    y: points.map((p) => p[1]),
  };
}

/**
 * Per-token values (by default `advantage`) along a response, as a heatmap of the tokens in
 * reading order, `width` tokens a row, each cell coloured by its value (red negative, blue
 * positive, white 0) and labelled with the token's text. Takes a frame of
 * `tokenAdvantagesFrame`; with `actionsOnly` (default) only sampled tokens are drawn, so the
 * prompt does not drown the response.
 */
export function advantageHeatmapFigure(
  tokens: DataFrame,
  { value = "advantage", actionsOnly = true, width = 24, title }: {
    value?: string;
    actionsOnly?: boolean;
    width?: number;
    title?: string;
  } = {},
): PlotlyFigure {
  for (const c of ["text", "position", value]) {
    if (!tokens.columns.includes(c)) {
      throw new Error(
        `advantageHeatmapFigure: no column ${JSON.stringify(c)} (columns: ${tokens.columns})`,
      );
    }
  }
  const rows = tokens.toRecords().filter((r) => !actionsOnly || r.is_action !== false);
  const nRows = Math.max(1, Math.ceil(rows.length / width));
  const grid = <T>(f: (r: Record<string, unknown>) => T, pad: T): T[][] =>
    Array.from(
      { length: nRows },
      (_, i) =>
        Array.from({ length: width }, (_, j) => {
          const r = rows[i * width + j];
          return r === undefined ? pad : f(r);
        }),
    );
  const z = grid((r) => (typeof r[value] === "number" ? r[value] as number : null), null);
  const finite = z.flat().filter((v): v is number => v !== null && Number.isFinite(v));
  const bound = Math.max(1e-6, ...finite.map(Math.abs));
  return {
    data: [{
      type: "heatmap",
      z,
      text: grid((r) => showToken(String(r.text)), ""),
      customdata: grid((r) => r.position as number, null),
      texttemplate: "%{text}",
      hovertemplate: `position %{customdata}: %{text}<br>${value} %{z:.4f}<extra></extra>`,
      colorscale: "RdBu",
      zmin: -bound,
      zmax: bound,
      zmid: 0,
      xgap: 1,
      ygap: 1,
    }],
    layout: {
      title: { text: title ?? `${value} per token` },
      xaxis: { visible: false },
      yaxis: { autorange: "reversed", visible: false },
      height: 120 + 28 * nRows,
    },
  };
}

/** A token's text as a cell label: whitespace and control characters made visible. */
function showToken(text: string): string {
  return text.replace(/\n/g, "↵").replace(/\t/g, "⇥").replace(/ /g, "·");
}

/**
 * Spread of episode rewards within each GRPO group (a box with every episode as a point): a
 * group whose episodes all score the same has zero spread and teaches group-baselined
 * methods nothing.
 */
export function rewardSpreadFigure(
  groups: Episode[][] | number[][],
  { title = "reward spread per group" }: { title?: string } = {},
): PlotlyFigure {
  return {
    data: groups.map((g, i) => ({
      type: "box",
      name: `group ${i}`,
      y: (g as (Episode | number)[]).map((e) => typeof e === "number" ? e : e.totalReward),
      boxpoints: "all",
      jitter: 0.3,
      pointpos: 0,
    })),
    layout: {
      title: { text: title },
      yaxis: { title: { text: "total reward" } },
      showlegend: false,
    },
  };
}

/**
 * Sampler log-probs against the learner's log-probs of the same tokens, with the y = x line:
 * points off the line are the sampler/learner mismatch that importance sampling corrects
 * (before a step) or the policy change of a step (after one).
 */
export function logprobScatterFigure(
  sampler: number[],
  learner: number[],
  { title = "sampler vs learner log-probs", names }: {
    title?: string;
    names?: { x: string; y: string };
  } = {},
): PlotlyFigure {
  if (sampler.length !== learner.length) {
    throw new Error(
      `logprobScatterFigure: ${sampler.length} sampler and ${learner.length} learner log-probs`,
    );
  }
  const all = [...sampler, ...learner].filter(Number.isFinite);
  const lo = all.length ? Math.min(...all) : -1;
  const hi = all.length ? Math.max(...all) : 0;
  return {
    data: [
      { type: "scatter", mode: "markers", name: "tokens", x: sampler, y: learner },
      {
        type: "scatter",
        mode: "lines",
        name: "y = x",
        x: [lo, hi],
        y: [lo, hi],
        line: { dash: "dash", color: "gray" },
      },
    ],
    layout: {
      title: { text: title },
      xaxis: { title: { text: names?.x ?? "sampler logprob" } },
      yaxis: { title: { text: names?.y ?? "learner logprob" } },
    },
  };
}
