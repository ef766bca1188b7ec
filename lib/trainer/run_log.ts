/**
 * A training run's directory as the trainer writes it (the layout and the files' schemas are
 * `lib/rundir`'s): `config.json`, `metrics.jsonl` (one row per step), `checkpoints.jsonl` (one
 * record per saved state), `status.json` (rewritten after each step), and an append-only
 * rollout store `rollouts/iteration_NNNNNN.jsonl` (every episode, turn and judgement of a step).
 *
 * Opening a directory takes its writer's lock (one trainer per directory) and repairs a last
 * line a crash cut short. Resuming rewinds the directory to the last checkpoint: rows and
 * rollout files of later steps (written before a crash) are removed, so a resumed run never
 * duplicates a step.
 *
 * @module
 */

import { join } from "node:path";
import {
  appendCheckpoint,
  appendJsonLines,
  appendRunEvent,
  type CheckpointRecord,
  lockRunDir,
  readCheckpoints,
  readJsonl,
  repairTornLine,
  rolloutFileStep,
  rolloutsPath,
  RUN_FILES,
  type RunDirStatus,
  runPath,
  writeFileAtomic,
  writeJsonAtomic,
  writeRunStatus,
} from "../rundir/mod.ts";

/** The JSONL files a crash can cut short, repaired when a run directory is opened. */
const APPENDED = ["metrics", "checkpoints", "spans", "events"] as const;

/** A run directory that is read and appended to, by the one process holding its lock. */
export class RunLog {
  /** The run directory. */
  readonly dir: string;
  #checkpoints: CheckpointRecord[];

  private constructor(dir: string, checkpoints: CheckpointRecord[]) {
    this.dir = dir;
    this.#checkpoints = checkpoints;
  }

  /**
   * Opens (or creates) a run directory: takes its lock (a second trainer fails with one line
   * naming the holder's pid; a dead holder's lock is taken over and named), cuts a last line a
   * crash left torn, removes a rollout file's half-written temporary copy, and reads its
   * checkpoints. Each repair is a notice and an event.
   */
  static async open(dir: string): Promise<RunLog> {
    const lock = await lockRunDir(dir);
    const notices: string[] = [];
    if (lock.tookOver) {
      notices.push(
        `took over ${RUN_FILES.lock} from pid ${lock.tookOver.pid} (since ` +
          `${lock.tookOver.since}), which is no longer running`,
      );
    }
    await Deno.mkdir(runPath(dir, "rollouts"), { recursive: true });
    // A rollout file's temporary copy (writeFileAtomic) outlives a writer killed mid-write. The
    // lock says no writer is alive; its step is played again.
    for await (const e of Deno.readDir(runPath(dir, "rollouts"))) {
      if (!e.isFile || !/^iteration_\d+\.jsonl\.\d+\.tmp$/.test(e.name)) continue;
      await Deno.remove(join(runPath(dir, "rollouts"), e.name));
      notices.push(`rollouts/${e.name}: removed a rollout file a stopped run left half written`);
    }
    for (const file of APPENDED) {
      const cut = await repairTornLine(runPath(dir, file));
      if (cut) notices.push(`${RUN_FILES[file]}: removed a last line cut short (${cut} bytes)`);
    }
    const rows = await readCheckpoints(dir, notices);
    const log = new RunLog(dir, rows);
    const step = rows.at(-1)?.step ?? 0;
    for (const notice of notices) {
      console.warn(`warning: ${notice}`);
      await appendRunEvent(dir, { step, event: "run_directory", detail: notice });
    }
    return log;
  }

  /** A run directory's checkpoint records, oldest first (none when it has none). */
  static async read(dir: string): Promise<CheckpointRecord[]> {
    return await readCheckpoints(dir);
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
    await writeJsonAtomic(runPath(this.dir, "config"), config);
  }

  /** Drops metric rows, spans, events and rollout files of steps after `step` (left by a crash). */
  async rewindTo(step: number): Promise<{ droppedRows: number }> {
    let dropped = 0;
    const bad: string[] = [];
    for (const file of ["metrics", "spans", "events"] as const) {
      const skipped: string[] = [];
      const rows = await readJsonl(runPath(this.dir, file), { skipped });
      const keep = await rewriteRows(runPath(this.dir, file), rows, step);
      if (file === "metrics") dropped = rows.length - keep.length;
      bad.push(...skipped.map((s) => s.replace("(skipped)", "(removed)")));
    }
    for (const notice of bad) {
      console.warn(`warning: ${notice}`);
      await this.appendEvent(step, "run_directory", notice);
    }
    for await (const e of Deno.readDir(runPath(this.dir, "rollouts"))) {
      const s = rolloutFileStep(e.name);
      if (s !== null && s > step) await Deno.remove(join(runPath(this.dir, "rollouts"), e.name));
    }
    return { droppedRows: dropped };
  }

  /**
   * Appends one step's metrics (the row must carry `step`), and says in `status.json` that the
   * run stands at that step.
   */
  async appendMetrics(row: { step: number } & Record<string, unknown>): Promise<void> {
    await appendJsonLines(runPath(this.dir, "metrics"), [row]);
    await this.writeStatus({ state: "running", step: row.step });
  }

  /**
   * Appends a step's timing spans (ms since the run started) to `timing_spans.jsonl`, one line
   * each, for the report's timeline.
   */
  async appendSpans(
    step: number,
    spans: { name: string; start: number; end: number }[],
  ): Promise<void> {
    await appendJsonLines(runPath(this.dir, "spans"), spans.map((s) => ({ step, ...s })));
  }

  /** Writes a step's rollout records (one JSON line each) to its own iteration file. */
  async writeRollouts(step: number, records: unknown[]): Promise<void> {
    await writeFileAtomic(
      rolloutsPath(this.dir, step),
      records.map((r) => JSON.stringify(r) + "\n").join(""),
    );
  }

  /** Records a saved state. */
  async appendCheckpoint(rec: CheckpointRecord): Promise<void> {
    await appendCheckpoint(this.dir, rec);
    this.#checkpoints.push(rec);
  }

  /** Records a step's notice (e.g. why it trained nothing) in `events.jsonl`. */
  async appendEvent(step: number, event: string, detail: string): Promise<void> {
    await appendRunEvent(this.dir, { step, event, detail });
  }

  /** Writes how the run stands (`status.json`). */
  async writeStatus(status: Omit<RunDirStatus, "time">): Promise<void> {
    await writeRunStatus(this.dir, status);
  }
}

/**
 * Rewrites a JSONL file with the rows of steps up to `step` (write-then-rename); rewritten even
 * when no row goes, so a line cut short by a crash does not stay in the file.
 */
async function rewriteRows(path: string, rows: unknown[], step: number): Promise<unknown[]> {
  const keep = rows.filter((r) => Number((r as { step?: number }).step) <= step);
  await writeFileAtomic(path, keep.map((r) => JSON.stringify(r) + "\n").join(""));
  return keep;
}
