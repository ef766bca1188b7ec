/**
 * A training run's directory, in tinker-cookbook's layout: `config.json`, `metrics.jsonl` (one
 * row per step), `checkpoints.jsonl` (one record per saved state), and an append-only rollout
 * store `rollouts/iteration_NNNNNN.jsonl` (every episode, turn and judgement of a step).
 *
 * Resuming rewinds the directory to the last checkpoint: rows and rollout files of later steps
 * (written before a crash) are removed, so a resumed run never duplicates a step.
 *
 * @module
 */

import { join } from "node:path";
import { z } from "zod";
import { formatZodError } from "../util/zod.ts";

/**
 * The run directory's files, by what they hold: the one place their names are written (the
 * trainer, the report, the run API and the benches read them through {@link runPath}).
 */
export const RUN_FILES = {
  config: "config.json",
  metrics: "metrics.jsonl",
  checkpoints: "checkpoints.jsonl",
  spans: "timing_spans.jsonl",
  evaluation: "eval.json",
  /** How the run stands: running, completed, interrupted or failed (with the error). */
  status: "status.json",
  /** Notices a step raised (e.g. why it trained nothing), one JSON line each. */
  events: "events.jsonl",
  rollouts: "rollouts",
  report: "report.html",
} as const;

/** A file of a run directory. */
export function runPath(dir: string, file: keyof typeof RUN_FILES): string {
  return join(dir, RUN_FILES[file]);
}

/** The rollout store's file of a step. */
export function rolloutsPath(dir: string, step: number): string {
  return join(dir, RUN_FILES.rollouts, `iteration_${String(step).padStart(6, "0")}.jsonl`);
}

/** How a run stands (`status.json`). */
export const RunDirStatusSchema = z.object({
  state: z.enum(["running", "completed", "interrupted", "failed"]),
  /** Steps completed. */
  step: z.number().int().min(0),
  /** The one-line reason of a failed run. */
  error: z.string().optional(),
  time: z.string(),
});

/** How a run stands. */
export type RunDirStatus = z.infer<typeof RunDirStatusSchema>;

/** One saved state in `checkpoints.jsonl`. */
export const CheckpointRecordSchema = z.object({
  name: z.string(),
  /** Steps completed when the state was saved; a resumed run continues at step + 1. */
  step: z.number().int().min(0),
  /** `tinker://…/weights/…`: weights and optimizer state. */
  state_path: z.string(),
  /** `tinker://…/sampler_weights/…`, for the final checkpoint. */
  sampler_path: z.string().optional(),
  kind: z.enum(["periodic", "final", "interrupted"]),
  time: z.string(),
});

/** A checkpoint record. */
export type CheckpointRecord = z.infer<typeof CheckpointRecordSchema>;

/** A run directory that is read and appended to. */
export class RunLog {
  readonly dir: string;
  #checkpoints: CheckpointRecord[];

  private constructor(dir: string, checkpoints: CheckpointRecord[]) {
    this.dir = dir;
    this.#checkpoints = checkpoints;
  }

  /** Opens (or creates) a run directory and reads its checkpoints. */
  static async open(dir: string): Promise<RunLog> {
    await Deno.mkdir(runPath(dir, "rollouts"), { recursive: true });
    return new RunLog(dir, await RunLog.read(dir));
  }

  /** A run directory's checkpoint records, oldest first (none when it has none). */
  static async read(dir: string): Promise<CheckpointRecord[]> {
    return (await readJsonl(runPath(dir, "checkpoints"))).map((r, i) => {
      const parsed = CheckpointRecordSchema.safeParse(r);
      if (!parsed.success) {
        throw new Error(
          `${runPath(dir, "checkpoints")} line ${i + 1}: not a checkpoint record ` +
            `(${formatZodError(parsed.error)})`,
        );
      }
      return parsed.data;
    });
  }

  /** Every checkpoint record, oldest first. */
  get checkpoints(): readonly CheckpointRecord[] {
    return this.#checkpoints;
  }

  /** The newest checkpoint, the one a rerun resumes from. */
  lastCheckpoint(): CheckpointRecord | null {
    return this.#checkpoints.at(-1) ?? null;
  }

  /** Writes the run's configuration (for the record; the command line is what a rerun uses). */
  async writeConfig(config: unknown): Promise<void> {
    await Deno.writeTextFile(runPath(this.dir, "config"), JSON.stringify(config, null, 2) + "\n");
  }

  /** Drops metric rows, spans and rollout files of steps after `step` (left by a crash). */
  async rewindTo(step: number): Promise<{ droppedRows: number }> {
    const path = runPath(this.dir, "metrics");
    const rows = await readJsonl(path);
    const keep = await rewriteRows(path, rows, step);
    for (const file of ["spans", "events"] as const) {
      await rewriteRows(runPath(this.dir, file), await readJsonl(runPath(this.dir, file)), step);
    }
    for await (const e of Deno.readDir(runPath(this.dir, "rollouts"))) {
      const m = /^iteration_(\d+)\.jsonl$/.exec(e.name);
      if (m && Number(m[1]) > step) await Deno.remove(join(runPath(this.dir, "rollouts"), e.name));
    }
    return { droppedRows: rows.length - keep.length };
  }

  /** Appends one step's metrics (the row must carry `step`). */
  async appendMetrics(row: { step: number } & Record<string, unknown>): Promise<void> {
    await appendLine(runPath(this.dir, "metrics"), row);
  }

  /**
   * Appends a step's timing spans (ms since the run started) to `timing_spans.jsonl`, one line
   * each, for the report's timeline.
   */
  async appendSpans(
    step: number,
    spans: { name: string; start: number; end: number }[],
  ): Promise<void> {
    const text = spans.map((s) => JSON.stringify({ step, ...s }) + "\n").join("");
    await Deno.writeTextFile(runPath(this.dir, "spans"), text, { append: true });
  }

  /** Writes a step's rollout records (one JSON line each) to its own iteration file. */
  async writeRollouts(step: number, records: unknown[]): Promise<void> {
    await Deno.writeTextFile(
      rolloutsPath(this.dir, step),
      records.map((r) => JSON.stringify(r) + "\n").join(""),
    );
  }

  /** Records a saved state. */
  async appendCheckpoint(rec: CheckpointRecord): Promise<void> {
    await appendLine(runPath(this.dir, "checkpoints"), CheckpointRecordSchema.parse(rec));
    this.#checkpoints.push(rec);
  }

  /** Records a step's notice (e.g. why it trained nothing) in `events.jsonl`. */
  async appendEvent(step: number, event: string, detail: string): Promise<void> {
    await appendLine(runPath(this.dir, "events"), { step, event, detail });
  }

  /** Writes how the run stands (`status.json`). */
  async writeStatus(status: Omit<RunDirStatus, "time">): Promise<void> {
    const rec = RunDirStatusSchema.parse({ ...status, time: new Date().toISOString() });
    await Deno.writeTextFile(runPath(this.dir, "status"), JSON.stringify(rec, null, 2) + "\n");
  }
}

/** How a run directory's run stands (`status.json`), or null when it has no status. */
export async function readRunStatus(dir: string): Promise<RunDirStatus | null> {
  const raw = await readJsonFile(runPath(dir, "status"));
  const parsed = RunDirStatusSchema.safeParse(raw);
  return parsed.success ? parsed.data : null;
}

/** Reads a JSON file (missing file: null); bad JSON is an error naming it. */
export async function readJsonFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${path}: not valid JSON`);
  }
}

/** Reads a JSONL file (missing file: no rows); a bad line is an error naming it. */
export async function readJsonl(path: string): Promise<unknown[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw e;
  }
  const lines = text.split("\n");
  const rows: unknown[] = [];
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    try {
      rows.push(JSON.parse(line));
    } catch {
      // A crash can cut the last line short; anything else is corruption worth reporting.
      if (i >= lines.length - 2) return;
      throw new Error(`${path} line ${i + 1}: not valid JSON`);
    }
  });
  return rows;
}

/**
 * Rewrites a JSONL file with the rows of steps up to `step`; rewritten even when no row goes, so a
 * line cut short by a crash does not stay in the file.
 */
async function rewriteRows(path: string, rows: unknown[], step: number): Promise<unknown[]> {
  const keep = rows.filter((r) => Number((r as { step?: number }).step) <= step);
  const tmp = `${path}.tmp`;
  await Deno.writeTextFile(tmp, keep.map((r) => JSON.stringify(r) + "\n").join(""));
  await Deno.rename(tmp, path);
  return keep;
}

async function appendLine(path: string, row: unknown): Promise<void> {
  await Deno.writeTextFile(path, JSON.stringify(row) + "\n", { append: true });
}
