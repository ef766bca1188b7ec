/**
 * A timeline (Gantt chart) of a run's timing spans (`timing_spans.jsonl`): per step, when its
 * groups were sampled, scored and trained, so overlap between sampling and training (the point
 * of `stream` and `async` execution) can be seen.
 *
 * @module
 */

import type { PlotlyFigure } from "./figures.ts";

/** One span of `timing_spans.jsonl`: ms since the run started. */
export interface TimingSpan {
  step: number;
  name: string;
  start: number;
  end: number;
}

const COLORS: Record<string, string> = {
  rollout: "#4c78a8",
  score: "#f58518",
  train: "#e45756",
  step: "#bab0ac",
};

/**
 * Horizontal bars, one row per (step, kind of span), of the last `lastSteps` steps.
 *
 * @example
 * const spans = (await readJsonl(join(dir, "timing_spans.jsonl"))) as TimingSpan[];
 * showFigure(timelineFigure(spans));
 */
export function timelineFigure(spans: TimingSpan[], lastSteps = 8): PlotlyFigure {
  const steps = [...new Set(spans.map((s) => s.step))].sort((a, b) => a - b).slice(-lastSteps);
  const shown = spans.filter((s) => steps.includes(s.step));
  const kind = (name: string) => name.split(" ")[0];
  const kinds = [...new Set(shown.map((s) => kind(s.name)))];
  return {
    data: kinds.map((k) => {
      const ofKind = shown.filter((s) => kind(s.name) === k);
      return {
        type: "bar",
        orientation: "h",
        name: k,
        y: ofKind.map((s) => `step ${s.step} ${k}`),
        x: ofKind.map((s) => (s.end - s.start) / 1000),
        base: ofKind.map((s) => s.start / 1000),
        text: ofKind.map((s) => s.name),
        marker: { color: COLORS[k] ?? "#72b7b2", opacity: 0.8 },
        hovertemplate: "%{text}: %{base:.2f}s → +%{x:.2f}s<extra></extra>",
      };
    }),
    layout: {
      title: { text: `Timeline of the last ${steps.length} steps` },
      barmode: "overlay",
      xaxis: { title: { text: "seconds since the run started" } },
      yaxis: { autorange: "reversed", type: "category" },
      height: Math.max(300, 22 * steps.length * kinds.length + 120),
    },
  };
}
