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
    await Deno.mkdir(join(dir, "rollouts"), { recursive: true });
    const records = (await readJsonl(join(dir, "checkpoints.jsonl"))).map((r, i) => {
      const parsed = CheckpointRecordSchema.safeParse(r);
      if (!parsed.success) {
        throw new Error(
          `${join(dir, "checkpoints.jsonl")} line ${i + 1}: not a checkpoint record ` +
            `(${formatZodError(parsed.error)})`,
        );
      }
      return parsed.data;
    });
    return new RunLog(dir, records);
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
    await Deno.writeTextFile(join(this.dir, "config.json"), JSON.stringify(config, null, 2) + "\n");
  }

  /** Drops metric rows, spans and rollout files of steps after `step` (left by a crash). */
  async rewindTo(step: number): Promise<{ droppedRows: number }> {
    const path = join(this.dir, "metrics.jsonl");
    const rows = await readJsonl(path);
    const keep = await rewriteRows(path, rows, step);
    await rewriteRows(
      join(this.dir, "timing_spans.jsonl"),
      await readJsonl(join(this.dir, "timing_spans.jsonl")),
      step,
    );
    for await (const e of Deno.readDir(join(this.dir, "rollouts"))) {
      const m = /^iteration_(\d+)\.jsonl$/.exec(e.name);
      if (m && Number(m[1]) > step) await Deno.remove(join(this.dir, "rollouts", e.name));
    }
    return { droppedRows: rows.length - keep.length };
  }

  /** Appends one step's metrics (the row must carry `step`). */
  async appendMetrics(row: { step: number } & Record<string, unknown>): Promise<void> {
    await appendLine(join(this.dir, "metrics.jsonl"), row);
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
    await Deno.writeTextFile(join(this.dir, "timing_spans.jsonl"), text, { append: true });
  }

  /** Writes a step's rollout records (one JSON line each) to its own iteration file. */
  async writeRollouts(step: number, records: unknown[]): Promise<void> {
    const path = join(this.dir, "rollouts", `iteration_${String(step).padStart(6, "0")}.jsonl`);
    await Deno.writeTextFile(path, records.map((r) => JSON.stringify(r) + "\n").join(""));
  }

  /** Records a saved state. */
  async appendCheckpoint(rec: CheckpointRecord): Promise<void> {
    await appendLine(join(this.dir, "checkpoints.jsonl"), CheckpointRecordSchema.parse(rec));
    this.#checkpoints.push(rec);
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
