/**
 * The durable records of the runs server, in one SQLite file (`node:sqlite`, built into Deno):
 * runs, their checkpoints' evaluations, the selected environment and its configuration, and a
 * lease that keeps two servers from managing the same data dir. Every change is one statement
 * (or one transaction), so a crash at any moment leaves each record either before or after it;
 * state changes compare-and-set on the current state, so two code paths never both move a run.
 *
 * @module
 */

import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import { z } from "zod";

/** Where a run is in its life. */
export const RunStateSchema = z.enum([
  "queued",
  "running",
  "finished",
  "stopped",
  "crashed",
  /** The trainer stopped it: it could not train (its status.json says why). */
  "failed",
]);
/** A run's state. */
export type RunState = z.infer<typeof RunStateSchema>;

/** One run, as stored. Times are ISO strings. */
export interface RunRecord {
  id: string;
  name: string;
  environment: string;
  state: RunState;
  /** The run's configuration by API field name (see ./fields.ts). */
  config: Record<string, unknown>;
  wandbProject: string | null;
  runDir: string;
  createdAt: string;
  /** When it last entered the queue (created or resumed). */
  queuedAt: string;
  /** When its current (or last) training process started. */
  startedAt: string | null;
  endedAt: string | null;
  /** Wall time of earlier attempts (a resumed run keeps counting). */
  elapsedBeforeS: number;
  /** Training processes started so far. */
  attempts: number;
  pid: number | null;
  /** The process's start time (from /proc), so a reused pid is never mistaken for it. */
  pidStart: string | null;
  exitCode: number | null;
  stopRequestedAt: string | null;
  error: string | null;
}

/** A checkpoint's held-out evaluation (or why it failed). */
export interface EvalRecord {
  runId: string;
  /** The checkpoint's `tinker://` state path. */
  checkpoint: string;
  step: number;
  kind: string;
  episodes: number;
  percentCorrect: number | null;
  rewardMean: number | null;
  error: string | null;
  createdAt: string;
}

const COLUMNS: Record<keyof RunRecord, string> = {
  id: "id",
  name: "name",
  environment: "environment",
  state: "state",
  config: "config",
  wandbProject: "wandb_project",
  runDir: "run_dir",
  createdAt: "created_at",
  queuedAt: "queued_at",
  startedAt: "started_at",
  endedAt: "ended_at",
  elapsedBeforeS: "elapsed_before_s",
  attempts: "attempts",
  pid: "pid",
  pidStart: "pid_start",
  exitCode: "exit_code",
  stopRequestedAt: "stop_requested_at",
  error: "error",
};

const SCHEMA = `
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  environment TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN (${RunStateSchema.options.map((o) => `'${o}'`).join(",")})),
  config TEXT NOT NULL,
  wandb_project TEXT,
  run_dir TEXT NOT NULL,
  created_at TEXT NOT NULL,
  queued_at TEXT NOT NULL,
  started_at TEXT,
  ended_at TEXT,
  elapsed_before_s REAL NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  pid INTEGER,
  pid_start TEXT,
  exit_code INTEGER,
  stop_requested_at TEXT,
  error TEXT
);
CREATE TABLE IF NOT EXISTS evals (
  run_id TEXT NOT NULL REFERENCES runs(id),
  checkpoint TEXT NOT NULL,
  step INTEGER NOT NULL,
  kind TEXT NOT NULL,
  episodes INTEGER NOT NULL,
  percent_correct REAL,
  reward_mean REAL,
  error TEXT,
  created_at TEXT NOT NULL,
  PRIMARY KEY (run_id, checkpoint)
);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS lease (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  pid INTEGER NOT NULL,
  pid_start TEXT,
  since TEXT NOT NULL
);
`;

/** Another live server holds the data dir. */
export class LeaseError extends Error {
  override name = "LeaseError";
}

type Row = Record<string, SQLInputValue>;

/** The runs database. */
export class RunStore {
  readonly path: string;
  #db: DatabaseSync;

  constructor(path: string) {
    this.path = path;
    this.#db = new DatabaseSync(path);
    // WAL: readers never block the writer; FULL: a committed record survives a power cut.
    this.#db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;");
    this.#db.exec("PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;");
    this.#db.exec(SCHEMA);
    this.#migrateStates();
  }

  /**
   * A database written before a run state was added keeps the old CHECK on `runs.state`:
   * rebuilt once with the current states, rows kept.
   */
  #migrateStates(): void {
    const row = this.#db.prepare("SELECT sql FROM sqlite_master WHERE name = 'runs'").get() as
      | { sql: string }
      | undefined;
    if (!row || RunStateSchema.options.every((o) => row.sql.includes(`'${o}'`))) return;
    this.#db.exec("PRAGMA foreign_keys = OFF; BEGIN IMMEDIATE");
    try {
      // SQLite's way: a new table under another name, the rows copied, the old one dropped,
      // the new one renamed (other tables' references to `runs` stay as they are).
      const create = /CREATE TABLE IF NOT EXISTS runs \([\s\S]*?\n\);/.exec(SCHEMA)![0];
      this.#db.exec(create.replace("IF NOT EXISTS runs (", "runs_migrated ("));
      this.#db.exec("INSERT INTO runs_migrated SELECT * FROM runs");
      this.#db.exec("DROP TABLE runs");
      this.#db.exec("ALTER TABLE runs_migrated RENAME TO runs");
      this.#db.exec("COMMIT");
    } catch (e) {
      this.#db.exec("ROLLBACK");
      throw e;
    } finally {
      this.#db.exec("PRAGMA foreign_keys = ON");
    }
  }

  /** Adds a new run (before anything is spawned for it). */
  insertRun(run: RunRecord): void {
    const cols = Object.values(COLUMNS);
    this.#db.prepare(
      `INSERT INTO runs (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`,
    ).run(...(Object.keys(COLUMNS) as (keyof RunRecord)[]).map((k) => toSql(k, run[k])));
  }

  /** A run by id, or null. */
  getRun(id: string): RunRecord | null {
    const row = this.#db.prepare("SELECT * FROM runs WHERE id = ?").get(id) as Row | undefined;
    return row ? fromRow(row) : null;
  }

  /** Every run, oldest first. */
  listRuns(states?: RunState[]): RunRecord[] {
    const where = states ? ` WHERE state IN (${states.map(() => "?").join(", ")})` : "";
    return (this.#db.prepare(`SELECT * FROM runs${where} ORDER BY created_at, rowid`)
      .all(...(states ?? [])) as Row[]).map(fromRow);
  }

  /**
   * Changes fields of a run in one statement. With `from`, only when the run is in one of those
   * states; returns whether it changed.
   */
  updateRun(id: string, patch: Partial<RunRecord>, from?: RunState[]): boolean {
    const keys = Object.keys(patch) as (keyof RunRecord)[];
    if (keys.length === 0) return true;
    const set = keys.map((k) => `${COLUMNS[k]} = ?`).join(", ");
    const guard = from ? ` AND state IN (${from.map(() => "?").join(", ")})` : "";
    const res = this.#db.prepare(`UPDATE runs SET ${set} WHERE id = ?${guard}`)
      .run(...keys.map((k) => toSql(k, patch[k])), id, ...(from ?? []));
    return Number(res.changes) === 1;
  }

  /** Records a checkpoint's evaluation (replacing an earlier attempt). */
  putEval(e: EvalRecord): void {
    this.#db.prepare(
      `INSERT OR REPLACE INTO evals (run_id, checkpoint, step, kind, episodes, percent_correct,
       reward_mean, error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      e.runId,
      e.checkpoint,
      e.step,
      e.kind,
      e.episodes,
      e.percentCorrect,
      e.rewardMean,
      e.error,
      e.createdAt,
    );
  }

  /** A run's evaluations, by step. */
  evalsFor(runId: string): EvalRecord[] {
    return (this.#db.prepare("SELECT * FROM evals WHERE run_id = ? ORDER BY step, created_at")
      .all(runId) as Row[]).map((r) => ({
        runId: String(r.run_id),
        checkpoint: String(r.checkpoint),
        step: Number(r.step),
        kind: String(r.kind),
        episodes: Number(r.episodes),
        percentCorrect: r.percent_correct === null ? null : Number(r.percent_correct),
        rewardMean: r.reward_mean === null ? null : Number(r.reward_mean),
        error: r.error === null ? null : String(r.error),
        createdAt: String(r.created_at),
      }));
  }

  /** A stored setting (JSON), or null. */
  getSetting<T>(key: string): T | null {
    const row = this.#db.prepare("SELECT value FROM settings WHERE key = ?").get(key) as
      | Row
      | undefined;
    return row ? JSON.parse(String(row.value)) as T : null;
  }

  /** Stores a setting (JSON). */
  setSetting(key: string, value: unknown): void {
    this.#db.prepare("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)")
      .run(key, JSON.stringify(value));
  }

  /**
   * Takes the data dir for this process. `isAlive(pid, start)` says whether a recorded holder
   * still runs; a live holder other than us is a {@link LeaseError}.
   */
  acquireLease(
    self: { pid: number; start: string | null },
    isAlive: (pid: number, start: string | null) => boolean,
  ): void {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const row = this.#db.prepare("SELECT pid, pid_start, since FROM lease WHERE id = 1").get() as
        | Row
        | undefined;
      if (row && Number(row.pid) !== self.pid) {
        const start = row.pid_start === null ? null : String(row.pid_start);
        if (isAlive(Number(row.pid), start)) {
          throw new LeaseError(
            `another runs server (pid ${row.pid}, since ${row.since}) manages ${this.path}; ` +
              `stop it, talk to it over HTTP, or use another --data-dir`,
          );
        }
      }
      this.#db.prepare(
        "INSERT OR REPLACE INTO lease (id, pid, pid_start, since) VALUES (1, ?, ?, ?)",
      ).run(self.pid, self.start, new Date().toISOString());
      this.#db.exec("COMMIT");
    } catch (e) {
      this.#db.exec("ROLLBACK");
      throw e;
    }
  }

  /** Gives the data dir up (only if we hold it). */
  releaseLease(pid: number): void {
    this.#db.prepare("DELETE FROM lease WHERE id = 1 AND pid = ?").run(pid);
  }

  /** Closes the database. */
  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }
}

function toSql(key: keyof RunRecord, value: unknown): SQLInputValue {
  if (key === "config") return JSON.stringify(value);
  return (value ?? null) as SQLInputValue;
}

function fromRow(row: Row): RunRecord {
  const s = (v: SQLInputValue) => (v === null ? null : String(v));
  const n = (v: SQLInputValue) => (v === null ? null : Number(v));
  return {
    id: String(row.id),
    name: String(row.name),
    environment: String(row.environment),
    state: RunStateSchema.parse(row.state),
    config: JSON.parse(String(row.config)),
    wandbProject: s(row.wandb_project),
    runDir: String(row.run_dir),
    createdAt: String(row.created_at),
    queuedAt: String(row.queued_at),
    startedAt: s(row.started_at),
    endedAt: s(row.ended_at),
    elapsedBeforeS: Number(row.elapsed_before_s),
    attempts: Number(row.attempts),
    pid: n(row.pid),
    pidStart: s(row.pid_start),
    exitCode: n(row.exit_code),
    stopRequestedAt: s(row.stop_requested_at),
    error: s(row.error),
  };
}
