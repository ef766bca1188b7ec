/**
 * Visualisation of rollouts, datums and runs: Polars frames (tables in notebooks), Plotly
 * figures as JSON, self-contained HTML reports, and the metrics file reader.
 *
 * @module
 */

export * from "./frames.ts";
export * from "./figures.ts";
export * from "./metrics.ts";
export * from "./html.ts";
export * from "./jupyter.ts";
export * from "./transcripts.ts";
export * from "./logprobs.ts";
export * from "./timeline.ts";
export * from "./whatif.ts";
