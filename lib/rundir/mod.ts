/**
 * The run directory: its file names and paths, the metrics rows and their keys, `eval.json`,
 * `status.json`, `events.jsonl`, `checkpoints.jsonl`, whole-line and write-then-rename writes,
 * readers that skip and report a bad line, and the one-writer lock. The trainer writes a run
 * directory through these; the viewer, tracking, the run API and the benches read it through
 * them, and none of them imports the trainer to do so.
 *
 * @example
 * import { readStepMetrics, METRIC } from "./lib/rundir/mod.ts";
 * const { rows, skipped } = await readStepMetrics(".tinkerbench/runs/demo");
 * console.log(rows.at(-1)?.[METRIC.reward], skipped);
 *
 * @module
 */

export * from "./atomic.ts";
export * from "./checkpoints.ts";
export * from "./evaluation.ts";
export * from "./files.ts";
export * from "./jsonl.ts";
export * from "./lock.ts";
export * from "./metrics.ts";
export * from "./status.ts";
