/**
 * What a run's own files say: its live progress from `metrics.jsonl`, its saved states from
 * `checkpoints.jsonl`, and the end of its `train.log`. The trainer writes these; the server only
 * reads them, so a status is never more than one metrics row behind the run.
 *
 * @module
 */

import { mean } from "../util/stats.ts";
import { METRIC, readStepMetrics, runPath, type StepMetrics } from "../rundir/mod.ts";

/** The run's files as the API reports them (`paths` of a run's status). */
export function apiPaths(runDir: string) {
  return {
    dir: runDir,
    config: runPath(runDir, "trainConfig"),
    log: runPath(runDir, "log"),
    metrics: runPath(runDir, "metrics"),
    checkpoints: runPath(runDir, "checkpoints"),
    report: runPath(runDir, "report"),
  };
}

/**
 * Every metrics row of a run (none yet: empty); a line that is not a row is left out and
 * reported to `skipped` when given, else an error.
 */
export function readMetrics(runDir: string, skipped?: string[]): Promise<StepMetrics[]> {
  return readStepMetrics(runDir, skipped);
}

/**
 * Metrics rows by run directory, read again only when the file changed (size or time), so
 * listing many runs does not reparse every metrics file on every call. A bad line is left out
 * and kept as the run's problem ({@link MetricsCache.problems}): one corrupt file never fails
 * a listing of every run.
 */
export class MetricsCache {
  readonly #entries = new Map<string, { key: string; rows: StepMetrics[]; skipped: string[] }>();

  /** The run's rows, from the cache when its file is unchanged. */
  async rows(runDir: string): Promise<StepMetrics[]> {
    return (await this.#read(runDir)).rows;
  }

  /** The lines of the run's metrics file left out (`metrics.jsonl line 4: …`). */
  async problems(runDir: string): Promise<string[]> {
    return (await this.#read(runDir)).skipped;
  }

  async #read(runDir: string): Promise<{ rows: StepMetrics[]; skipped: string[] }> {
    let key: string;
    try {
      const st = await Deno.stat(runPath(runDir, "metrics"));
      key = `${st.size} ${st.mtime?.getTime()}`;
    } catch {
      return { rows: [], skipped: [] };
    }
    const hit = this.#entries.get(runDir);
    if (hit?.key === key) return hit;
    const skipped: string[] = [];
    const rows = await readStepMetrics(runDir, skipped);
    const entry = { key, rows, skipped };
    this.#entries.set(runDir, entry);
    return entry;
  }
}

/** The headline numbers of a metrics row. */
export interface StepSummary {
  step: number;
  reward_mean: number | null;
  /** Fraction of episodes solved (0–1). */
  percent_correct: number | null;
  loss: number | null;
}

/** The headline numbers of a row (nulls when the trainer did not log them). */
export function summarize(row: StepMetrics | undefined): StepSummary {
  const get = (k: string) => (row && Number.isFinite(row[k]) ? row[k] : null);
  return {
    step: row?.step ?? 0,
    reward_mean: get(METRIC.reward),
    percent_correct: get(METRIC.success),
    loss: get(METRIC.loss),
  };
}

/** Estimated seconds left: the mean time of the last few steps times the steps to go. */
export function estimateSecondsLeft(rows: StepMetrics[], totalSteps: number): number | null {
  const recent = rows.slice(-5).map((r) => r[METRIC.stepTime]).filter(Number.isFinite);
  if (recent.length === 0) return null;
  const left = Math.max(0, totalSteps - (rows.at(-1)?.step ?? 0));
  return Math.round(left * mean(recent));
}

/** Up to `n` rows spread evenly over the run, always including the last. */
export function sampleHistory(rows: StepMetrics[], n = 10): StepSummary[] {
  if (rows.length <= n) return rows.map(summarize);
  const picked = Array.from(
    { length: n },
    (_, i) => rows[Math.round(i * (rows.length - 1) / (n - 1))],
  );
  return picked.map(summarize);
}

/**
 * What a run's log says went wrong: its last `error:` line (the trainer's one-line errors and
 * Deno's uncaught exceptions both start so), else, with `orLastLines`, its last lines.
 */
export async function logError(runDir: string, orLastLines = 0): Promise<string | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(runPath(runDir, "log"));
  } catch {
    return null;
  }
  const all = text.split("\n").map((l) => l.trimEnd()).filter((l) => l.trim() !== "");
  const error = all.findLast((l) => /^error: /.test(l));
  if (error) return error;
  return orLastLines > 0 ? all.slice(-orLastLines).join("\n") || null : null;
}

/** Whether a file exists. */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}
