/**
 * What the API says about a run: its status (`GET /runs/{id}`), its line in the list, and its
 * results (`GET /runs/{id}/metrics`), built from the run's record, its files and its stored
 * evaluations.
 *
 * @module
 */

import type { FieldValue } from "./fields.ts";
import { trainingCommand } from "./process.ts";
import {
  apiPaths,
  estimateSecondsLeft,
  exists,
  MetricsCache,
  sampleHistory,
  summarize,
} from "./run_files.ts";
import { readCheckpoints } from "../rundir/mod.ts";
import type { RunResults, RunStatus } from "./schemas.ts";
import type { EvalRecord, RunRecord, RunStore } from "./store.ts";
import type { EvalQueue } from "./eval_queue.ts";
import { readWandbState } from "../tracking/wandb.ts";

/** Builds run views; keeps a cache of metrics files. */
export class RunViews {
  readonly #store: RunStore;
  readonly #evals: EvalQueue;
  readonly #metrics = new MetricsCache();

  constructor(store: RunStore, evals: EvalQueue) {
    this.#store = store;
    this.#evals = evals;
  }

  /** A run's current status. */
  async status(run: RunRecord): Promise<RunStatus> {
    const rows = await this.#metrics.rows(run.runDir);
    const now = summarize(rows.at(-1));
    const total = Number(run.config.total_steps);
    const lastEval = latestEval(this.#store.evalsFor(run.id));
    const running = run.state === "running" && run.startedAt !== null;
    const elapsed = run.elapsedBeforeS +
      (running ? (Date.now() - Date.parse(run.startedAt!)) / 1000 : 0);
    const paths = apiPaths(run.runDir);
    const problems = [...await this.#metrics.problems(run.runDir)];
    const checkpoints = await readCheckpoints(run.runDir, problems);
    return {
      run_id: run.id,
      name: run.name,
      wandb_run_name: run.name,
      wandb_project: run.wandbProject,
      wandb_url: await wandbUrl(run.runDir),
      environment: run.environment,
      state: run.state,
      status: run.state,
      stopping: run.state === "running" && run.stopRequestedAt !== null,
      ...now,
      total_steps: total,
      eval_percent_correct: lastEval?.percentCorrect ?? null,
      evaluated_step: lastEval?.step ?? null,
      evaluating: this.#evals.isPending(run.id),
      elapsed_s: Math.round(elapsed),
      eta_s: run.state === "finished"
        ? 0
        : run.state === "running" || run.state === "queued"
        ? estimateSecondsLeft(rows, total)
        : null,
      created_at: run.createdAt,
      started_at: run.startedAt,
      ended_at: run.endedAt,
      attempts: run.attempts,
      pid: run.state === "running" ? run.pid : null,
      failure: run.error,
      last_checkpoint: checkpoints.at(-1) ?? null,
      file_problems: problems,
      config: run.config as Record<string, FieldValue>,
      paths,
      command: trainingCommand(paths.config),
    };
  }

  /** A run's line in `GET /runs`. */
  async summary(run: RunRecord) {
    const rows = await this.#metrics.rows(run.runDir);
    return {
      run_id: run.id,
      name: run.name,
      wandb_run_name: run.name,
      environment: run.environment,
      state: run.state,
      status: run.state,
      step: rows.at(-1)?.step ?? 0,
      total_steps: Number(run.config.total_steps),
      created_at: run.createdAt,
    };
  }

  /** A run's results: final metrics, a short history, weights, evaluations, report. */
  async results(run: RunRecord): Promise<RunResults> {
    const rows = await this.#metrics.rows(run.runDir);
    const checkpoints = await readCheckpoints(run.runDir);
    const evals = this.#store.evalsFor(run.id);
    // The newest checkpoint with sampler weights, else the newest one.
    const best = checkpoints.findLast((c) => c.sampler_path) ?? checkpoints.at(-1) ?? null;
    const paths = apiPaths(run.runDir);
    const { step: _, ...final } = rows.at(-1) ?? { step: 0 };
    return {
      run_id: run.id,
      state: run.state,
      status: run.state,
      environment: run.environment,
      wandb_project: run.wandbProject,
      wandb_run_name: run.name,
      wandb_url: await wandbUrl(run.runDir),
      final_metrics: final,
      summary: summarize(rows.at(-1)),
      history: sampleHistory(rows),
      weights: best
        ? {
          step: best.step,
          kind: best.kind,
          sampler_path: best.sampler_path ?? null,
          state_path: best.state_path,
        }
        : null,
      tinker_path: best ? best.sampler_path ?? best.state_path : null,
      checkpoints,
      evals: evals.map((e) => ({
        step: e.step,
        kind: e.kind,
        checkpoint: e.checkpoint,
        episodes: e.episodes,
        percent_correct: e.percentCorrect,
        reward_mean: e.rewardMean,
        failure: e.error,
      })),
      eval_percent_correct: latestEval(evals)?.percentCorrect ?? null,
      report_path: (await exists(paths.report)) ? paths.report : null,
      metrics_path: paths.metrics,
    };
  }
}

/** The run's W&B address, once its training process created the W&B run (`wandb.json`). */
async function wandbUrl(runDir: string): Promise<string | null> {
  return (await readWandbState(runDir))?.url ?? null;
}

/** The evaluation of the newest evaluated checkpoint. */
function latestEval(evals: EvalRecord[]): EvalRecord | undefined {
  return evals.filter((e) => e.percentCorrect !== null).at(-1);
}
