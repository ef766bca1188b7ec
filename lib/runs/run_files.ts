/**
 * What a run's own files say: its live progress from `metrics.jsonl`, its saved states from
 * `checkpoints.jsonl`, and the end of its `train.log`. The trainer writes these; the server only
 * reads them, so a status is never more than one metrics row behind the run.
 *
 * @module
 */

import { join } from "node:path";
import { mean } from "../util/stats.ts";
import type { StepMetrics } from "../trainer/run.ts";
import { type CheckpointRecord, CheckpointRecordSchema, readJsonl } from "../trainer/run_log.ts";

/** The trainer's metric names the API reports (tinker-cookbook's names). */
export const METRIC = {
  reward: "env/all/reward/total",
  success: "env/all/success",
  loss: "train/loss:sum",
  stepTime: "time/step",
} as const;

/** The files of a run directory. */
export function runPaths(runDir: string) {
  return {
    dir: runDir,
    config: join(runDir, "train.yaml"),
    log: join(runDir, "train.log"),
    metrics: join(runDir, "metrics.jsonl"),
    checkpoints: join(runDir, "checkpoints.jsonl"),
    report: join(runDir, "report.html"),
  };
}

/** Every metrics row of a run (none yet: empty). */
export async function readMetrics(runDir: string): Promise<StepMetrics[]> {
  const rows = await readJsonl(runPaths(runDir).metrics);
  return rows.filter((r): r is StepMetrics =>
    typeof r === "object" && r !== null && typeof (r as { step?: unknown }).step === "number"
  );
}

/**
 * Metrics rows by run directory, read again only when the file changed (size or time), so
 * listing many runs does not reparse every metrics file on every call.
 */
export class MetricsCache {
  readonly #entries = new Map<string, { key: string; rows: StepMetrics[] }>();

  /** The run's rows, from the cache when its file is unchanged. */
  async rows(runDir: string): Promise<StepMetrics[]> {
    let key: string;
    try {
      const st = await Deno.stat(runPaths(runDir).metrics);
      key = `${st.size} ${st.mtime?.getTime()}`;
    } catch {
      return [];
    }
    const hit = this.#entries.get(runDir);
    if (hit?.key === key) return hit.rows;
    const rows = await readMetrics(runDir);
    this.#entries.set(runDir, { key, rows });
    return rows;
  }
}

/** Every checkpoint record of a run; lines that are not records are skipped. */
export async function readCheckpoints(runDir: string): Promise<CheckpointRecord[]> {
  const rows = await readJsonl(runPaths(runDir).checkpoints);
  return rows.flatMap((r) => {
    const parsed = CheckpointRecordSchema.safeParse(r);
    return parsed.success ? [parsed.data] : [];
  });
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
    text = await Deno.readTextFile(runPaths(runDir).log);
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
