/**
 * The run queue: starts queued runs as training processes up to a concurrency limit, watches
 * them, stops them with Ctrl-C semantics (then kills them after a grace period), resumes them,
 * and decides from the run's own files how each one ended. After a restart it adopts training
 * processes that are still alive and marks those that died while it was down as `crashed`.
 *
 * Every decision is written to the store before it is acted on (the record before the spawn,
 * the stop request before the signal), and every state change compares and sets the state.
 *
 * @module
 */

import { join } from "node:path";
import { stringify as toYaml } from "yaml";
import { ConfigError, loadTrainConfig } from "../config/mod.ts";
import { writeRunReport } from "../viewer/report.ts";
import { readRunStatus, type RunDirStatus, runPath, writeFileAtomic } from "../rundir/mod.ts";
import { type RunConfig, trainingSettings } from "./fields.ts";
import { isAlive, signalProcess, spawnTraining, type TrainingProcess } from "./process.ts";
import { exists, logError, readMetrics } from "./run_files.ts";
import { readCheckpoints } from "../rundir/mod.ts";
import type { RunRecord, RunState, RunStore } from "./store.ts";
import { EvalQueue, type HeldOutEvaluator } from "./eval_queue.ts";

/** Options of {@link RunManager}. */
export interface RunManagerOptions {
  /** The data dir: training processes' `TINKERBENCH_HOME`. */
  dataDir: string;
  /** Where run directories go. */
  runsDir: string;
  /** Training processes at once (default 1: two would share this machine's two cores). */
  maxConcurrent?: number;
  /** After a stop, how long a run may take to finish its step and save (default 120 s). */
  stopGraceMs?: number;
  /** How often processes and files are checked (default 1 s). */
  pollMs?: number;
  /** What scores checkpoints (the trainer's evaluator, from the entry point). */
  evaluator: HeldOutEvaluator;
}

/** A run that cannot do what was asked in its state (HTTP 409). */
export class RunStateError extends Error {
  override name = "RunStateError";
}

/** A run configuration the trainer rejects (HTTP 400). */
export class RunConfigError extends Error {
  override name = "RunConfigError";
}

/** Manages the training processes of the runs in a {@link RunStore}. */
export class RunManager {
  readonly store: RunStore;
  readonly evals: EvalQueue;
  readonly maxConcurrent: number;
  readonly #o: Required<RunManagerOptions>;
  /** Processes this server started, by run id. */
  readonly #children = new Map<string, TrainingProcess>();
  /** Runs already sent SIGKILL after their grace period. */
  readonly #killed = new Set<string>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #polling: Promise<void> | null = null;
  #closed = false;

  constructor(store: RunStore, o: RunManagerOptions) {
    this.store = store;
    // `??`, not a spread: options passed as undefined keep their defaults.
    this.#o = {
      dataDir: o.dataDir,
      runsDir: o.runsDir,
      maxConcurrent: o.maxConcurrent ?? 1,
      stopGraceMs: o.stopGraceMs ?? 120_000,
      pollMs: o.pollMs ?? 1000,
      evaluator: o.evaluator,
    };
    this.maxConcurrent = this.#o.maxConcurrent;
    this.evals = new EvalQueue(store, o.dataDir, o.evaluator);
  }

  /** Reconciles the records with the processes that exist, then starts watching. */
  async start(): Promise<void> {
    for (const run of this.store.listRuns(["running"])) {
      if (run.pid !== null && isAlive(run.pid, run.pidStart)) continue; // adopted
      await this.#finish(run, { wasDown: true });
    }
    for (const run of this.store.listRuns()) await this.evals.scan(run);
    this.#tick();
    this.#timer = setInterval(() => void this.poll(), this.#o.pollMs);
  }

  /** Stops watching; running training processes go on and a later server adopts them. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#polling;
    await this.evals.close();
  }

  /**
   * Writes a new run's directory and config file, checks the config with the trainer's own
   * loader, records the run as queued and starts it if a slot is free.
   */
  async create(
    o: { id: string; name: string; environment: string; config: RunConfig; wandbProject?: string },
  ): Promise<RunRecord> {
    const runDir = join(this.#o.runsDir, o.id);
    const configPath = runPath(runDir, "trainConfig");
    await Deno.mkdir(runDir, { recursive: true });
    // The run's name and project are its W&B names too (used when W&B is on).
    const settings = {
      ...trainingSettings(o.config, runDir),
      wandb_run_name: o.name,
      ...(o.wandbProject ? { wandb_project_name: o.wandbProject } : {}),
    };
    const text = `# Written by the runs server for run ${o.id} (${o.name}).\n` +
      `# Resume by hand: deno task train --config-path ${configPath}\n` + toYaml(settings);
    try {
      await loadTrainConfig({ file: { path: configPath, text } });
    } catch (e) {
      await Deno.remove(runDir, { recursive: true });
      if (e instanceof ConfigError) throw new RunConfigError(e.message);
      throw e;
    }
    await writeFileAtomic(configPath, text);
    const now = new Date().toISOString();
    const run: RunRecord = {
      id: o.id,
      name: o.name,
      environment: o.environment,
      state: "queued",
      config: o.config,
      wandbProject: o.wandbProject ?? null,
      runDir,
      createdAt: now,
      queuedAt: now,
      startedAt: null,
      endedAt: null,
      elapsedBeforeS: 0,
      attempts: 0,
      pid: null,
      pidStart: null,
      exitCode: null,
      stopRequestedAt: null,
      error: null,
    };
    this.store.insertRun(run);
    this.#tick();
    return this.store.getRun(o.id)!;
  }

  /**
   * Stops a run: a queued one at once; a running one gets SIGINT (it finishes its step, saves
   * an `interrupted` checkpoint and exits) and SIGKILL after the grace period.
   */
  stop(id: string): RunRecord {
    const run = this.#get(id);
    if (run.state === "queued") {
      this.store.updateRun(id, { state: "stopped", endedAt: new Date().toISOString() }, [
        "queued",
      ]);
    } else if (run.state === "running") {
      if (run.stopRequestedAt === null) {
        this.store.updateRun(id, { stopRequestedAt: new Date().toISOString() }, ["running"]);
        if (run.pid !== null) signalProcess(run.pid, "SIGINT");
      }
    } else {
      throw new RunStateError(`run ${id} is not running (state: ${run.state})`);
    }
    return this.#get(id);
  }

  /** Queues a stopped or crashed run again; its process resumes from the last checkpoint. */
  resume(id: string): RunRecord {
    const run = this.#get(id);
    if (run.state !== "stopped" && run.state !== "crashed") {
      const why = run.state === "finished"
        ? `it finished all its ${run.config.total_steps} steps`
        : `it is ${run.state}`;
      throw new RunStateError(`run ${id} cannot be resumed: ${why}`);
    }
    this.store.updateRun(id, {
      state: "queued",
      queuedAt: new Date().toISOString(),
      endedAt: null,
      stopRequestedAt: null,
      exitCode: null,
      error: null,
    }, ["stopped", "crashed"]);
    this.#tick();
    return this.#get(id);
  }

  /** One round of watching: ended processes, overdue stops, new checkpoints, free slots. */
  poll(): Promise<void> {
    // A process can end after close (its exit wakes a poll): the store may be gone by then.
    if (this.#closed) return Promise.resolve();
    this.#polling ??= this.#poll().finally(() => (this.#polling = null));
    return this.#polling;
  }

  async #poll(): Promise<void> {
    for (const run of this.store.listRuns(["running"])) {
      const child = this.#children.get(run.id);
      const alive = run.pid !== null && isAlive(run.pid, run.pidStart);
      if (!alive && (run.pid !== null || !child)) {
        await this.#finish(run, {});
        continue;
      }
      const overdue = run.stopRequestedAt !== null &&
        Date.now() - Date.parse(run.stopRequestedAt) > this.#o.stopGraceMs;
      if (overdue && run.pid !== null && !this.#killed.has(run.id)) {
        this.#killed.add(run.id);
        signalProcess(run.pid, "SIGKILL");
      }
      await this.evals.scan(run);
    }
    this.#tick();
  }

  #tick(): void {
    let free = this.maxConcurrent - this.store.listRuns(["running"]).length;
    for (const run of this.store.listRuns(["queued"]).sort(byQueued)) {
      if (free-- <= 0) break;
      this.#launch(run);
    }
  }

  #launch(run: RunRecord): void {
    const startedAt = new Date().toISOString();
    const claimed = this.store.updateRun(run.id, {
      state: "running",
      startedAt,
      attempts: run.attempts + 1,
      pid: null,
      pidStart: null,
      exitCode: null,
      error: null,
    }, ["queued"]);
    if (!claimed) return;
    let proc: TrainingProcess;
    try {
      proc = spawnTraining({
        configPath: runPath(run.runDir, "trainConfig"),
        logFile: runPath(run.runDir, "log"),
        dataDir: this.#o.dataDir,
      });
    } catch (e) {
      this.#end(run.id, startedAt, {
        state: "crashed",
        error: `could not start the training process: ${(e as Error).message}`,
      });
      return;
    }
    this.#children.set(run.id, proc);
    this.#killed.delete(run.id);
    this.store.updateRun(run.id, { pid: proc.pid, pidStart: proc.start }, ["running"]);
    proc.exited.then(() => void this.poll());
  }

  /** Decides how a run whose process is gone ended, from its exit code and its files. */
  async #finish(run: RunRecord, { wasDown = false }: { wasDown?: boolean }): Promise<void> {
    const child = this.#children.get(run.id);
    this.#children.delete(run.id);
    const code = child ? await child.exited : null;
    const last = (await readCheckpoints(run.runDir)).at(-1) ?? null;
    const total = Number(run.config.total_steps);
    let state: RunState, error: string | null = null;
    const status: RunDirStatus | null = await readRunStatus(run.runDir);
    if (run.stopRequestedAt !== null) {
      state = "stopped";
      if (this.#killed.has(run.id)) {
        error = `killed after the ${this.#o.stopGraceMs / 1000} s grace period; resumes from ` +
          (last ? `step ${last.step}` : "the start");
      }
    } else if (last?.kind === "final" && last.step >= total && (code === 0 || code === null)) {
      state = "finished";
    } else if (
      code === 0 &&
      (last?.kind === "interrupted" || status?.state === "interrupted")
    ) {
      // Interrupted by someone else's Ctrl-C (before a step trained, with no checkpoint).
      state = "stopped";
    } else if (status?.state === "failed") {
      state = "failed";
      error = `${status.error}; change the config and start a new run`;
    } else {
      state = "crashed";
      const why = code === null
        ? (wasDown
          ? "the training process ended while the server was down"
          : "the training process was killed")
        : `the training process exited with code ${code}`;
      // A process that exited by itself says why in its log; a killed one has nothing to add.
      const tail = await logError(run.runDir, code === null ? 0 : 3);
      error = `${why}${tail ? `: ${tail}` : ""}; POST /runs/${run.id}/resume continues from ` +
        (last ? `step ${last.step}` : "the start");
    }
    this.#end(run.id, run.startedAt, { state, error, exitCode: code });
    await this.evals.scan(this.#get(run.id));
    if (state === "crashed" && !(await exists(runPath(run.runDir, "report")))) {
      // The trainer writes its report at the end; a crashed run gets one from what it logged.
      if ((await readMetrics(run.runDir, [])).length > 0) {
        await writeRunReport(run.runDir).catch(() => undefined);
      }
    }
  }

  #end(
    id: string,
    startedAt: string | null,
    patch: { state: RunState; error?: string | null; exitCode?: number | null },
  ): void {
    const now = new Date();
    const ran = startedAt ? (now.getTime() - Date.parse(startedAt)) / 1000 : 0;
    const before = this.#get(id).elapsedBeforeS;
    this.store.updateRun(id, {
      ...patch,
      endedAt: now.toISOString(),
      elapsedBeforeS: before + Math.max(0, ran),
    }, ["running"]);
  }

  #get(id: string): RunRecord {
    const run = this.store.getRun(id);
    if (!run) throw new Error(`run ${id} vanished from the store`);
    return run;
  }
}

function byQueued(a: RunRecord, b: RunRecord): number {
  return a.queuedAt < b.queuedAt ? -1 : a.queuedAt > b.queuedAt ? 1 : 0;
}
