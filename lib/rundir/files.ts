/**
 * The run directory's file names and paths, in tinker-cookbook's layout: the one place they are
 * written. The trainer writes these files; the viewer, tracking, the run API and the benches read
 * them through {@link runPath} and {@link rolloutsPath}, never by spelling a name.
 *
 * @module
 */

import { basename, dirname, join } from "node:path";

/** The run directory's files, by what they hold. */
export const RUN_FILES = {
  /** The resolved training config, secrets redacted (for the record). */
  config: "config.json",
  /** One row of {@link StepMetrics} per step. */
  metrics: "metrics.jsonl",
  /** One record per saved state, oldest first. */
  checkpoints: "checkpoints.jsonl",
  /** Each step's timing spans, one line each, for the report's timeline. */
  spans: "timing_spans.jsonl",
  /** The held-out comparison of the base model and the trained policy. */
  evaluation: "eval.json",
  /** How the run stands: running (at which step), completed, interrupted or failed. */
  status: "status.json",
  /** Notices a step raised (e.g. why it trained nothing), one JSON line each. */
  events: "events.jsonl",
  /** The rollout store: `iteration_NNNNNN.jsonl` per step. */
  rollouts: "rollouts",
  /** The run viewer written as one page. */
  report: "report.html",
  /** The config file the run API writes for a run it starts (`--config-path`). */
  trainConfig: "train.yaml",
  /** A run API run's output (stdout and stderr of its training process). */
  log: "train.log",
  /** The writer's lock: the pid of the one process writing this directory. */
  lock: "run.lock",
} as const;

/** A file of a run directory, by what it holds. */
export type RunFile = keyof typeof RUN_FILES;

/**
 * A file of a run directory.
 *
 * @example
 * runPath(".tinkerbench/runs/demo", "metrics"); // ".tinkerbench/runs/demo/metrics.jsonl"
 */
export function runPath(dir: string, file: RunFile): string {
  return join(dir, RUN_FILES[file]);
}

/** The rollout store's file of a step (`rollouts/iteration_000007.jsonl`). */
export function rolloutsPath(dir: string, step: number): string {
  return join(dir, RUN_FILES.rollouts, `iteration_${String(step).padStart(6, "0")}.jsonl`);
}

/** The step of a rollout store file name (`iteration_000007.jsonl` → 7), else null. */
export function rolloutFileStep(name: string): number | null {
  const m = /^iteration_(\d+)\.jsonl$/.exec(name);
  return m ? Number(m[1]) : null;
}

/**
 * A run file's name as errors and notes show it: relative to its run directory
 * (`metrics.jsonl`, `rollouts/iteration_000003.jsonl`), never an absolute path.
 */
export function runFileLabel(path: string): string {
  const parent = basename(dirname(path));
  return parent === RUN_FILES.rollouts ? `${parent}/${basename(path)}` : basename(path);
}
