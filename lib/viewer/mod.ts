/**
 * The run viewer: summary charts and every episode of one or more runs, as a static page
 * (`deno task report`) or served live while a run trains (`deno task report --serve`).
 *
 * @module
 */

export * from "./charts.ts";
export * from "./data.ts";
export * from "./page.ts";
export * from "./report.ts";
export * from "./serve.ts";
export * from "./whatif.ts";
export * from "./settings.ts";
// Types the charts name.
export type { NamedRun, PlotlyFigure, PlotlyTrace } from "../viz/figures.ts";
export type { DataFrame } from "../viz/frames.ts";
