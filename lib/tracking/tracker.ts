/**
 * What a training command does with tracking, in one place for `train` (every mode and source,
 * and so every run of the run API, which spawns it) and `sft`: open the W&B mirror and the
 * OpenReward upload from the settings before the run, align the mirror with the run directory
 * once the run knows where it starts, forward every step, put the held-out evaluation in the
 * summary, and finish with the exit code.
 *
 * @module
 */

import { join } from "node:path";
import type { TrainConfig } from "../config/schema.ts";
import { type HeldOutEvaluation, readJsonl, RUN_FILES, runPath } from "../rundir/mod.ts";
import { decideWandb, type RunNames } from "./settings.ts";
import { readNetrc } from "./netrc.ts";
import { WandbRun, type WandbRunOptions } from "./wandb.ts";
import { openRolloutUploads, type RunRolloutUploads } from "./openreward_rollouts.ts";

/** A run's names and W&B switch from its training config (`logging`). */
export function runNames(cfg: TrainConfig): RunNames {
  return {
    useWandb: cfg.logging.use_wandb,
    project: cfg.logging.project_name,
    runName: cfg.logging.run_name,
  };
}

/** Options of {@link RunTracking.open}. */
export interface RunTrackingOptions {
  runDir: string;
  /** The run's configuration as W&B shows it (secrets redacted). */
  config: Record<string, unknown>;
  names: RunNames;
  /** A training config: its hosted OpenReward environments' episodes are uploaded. */
  trainConfig?: TrainConfig;
  env?: Record<string, string | undefined>;
  /** Where information lines go (default: stdout). */
  print?: (line: string) => void;
  /** Where warnings go (default: stderr). */
  warn?: (line: string) => void;
  retry?: Pick<WandbRunOptions, "backoffMs" | "maxBackoffMs" | "timeoutMs">;
}

/** The tracking of one run: W&B (when on) and OpenReward uploads (when on). */
export class RunTracking {
  readonly wandb: WandbRun | null;
  readonly uploads: RunRolloutUploads | null;
  readonly #runDir: string;
  readonly #print: (line: string) => void;
  readonly #warn: (line: string) => void;
  #started: Promise<void> = Promise.resolve();

  private constructor(
    o: RunTrackingOptions,
    wandb: WandbRun | null,
    uploads: RunRolloutUploads | null,
  ) {
    this.#runDir = o.runDir;
    this.#print = o.print ?? ((line) => console.log(line));
    this.#warn = o.warn ?? ((line) => console.error(line));
    this.wandb = wandb;
    this.uploads = uploads;
  }

  /**
   * Opens what the environment and the run's settings ask for. Nothing here waits for the
   * network. A bad W&B or OpenReward variable, or `use_wandb: true` without a key, throws a
   * ConfigError.
   */
  static async open(o: RunTrackingOptions): Promise<RunTracking> {
    const env = o.env ?? Deno.env.toObject();
    const print = o.print ?? ((line: string) => console.log(line));
    const warn = o.warn ?? ((line: string) => console.error(line));
    const uploads = o.trainConfig
      ? openRolloutUploads(o.trainConfig, o.runDir, { env, warn })
      : null;
    const decision = decideWandb(env, o.names, o.runDir, readNetrc(env));
    let wandb: WandbRun | null = null;
    if (decision.target) {
      await Deno.mkdir(o.runDir, { recursive: true });
      wandb = await WandbRun.open({
        target: decision.target,
        runDir: o.runDir,
        config: o.config,
        warn,
        ...o.retry,
      });
      print(
        `W&B: run ${wandb.id} in project ${decision.target.project} at ` +
          `${decision.target.baseUrl} (id kept in ${join(o.runDir, "wandb.json")})`,
      );
      for (const line of decision.notes) print(line);
    } else if (decision.why) {
      print(decision.why);
    }
    return new RunTracking(o, wandb, uploads);
  }

  /**
   * The run starts: W&B's history is aligned with the rows `metrics.jsonl` holds now (after a
   * resume rewound it; rows an earlier process could not send are sent).
   */
  started(): void {
    const wandb = this.wandb;
    if (!wandb) return;
    const skipped: string[] = [];
    this.#started = readJsonl(runPath(this.#runDir, "metrics"), { skipped }).then(
      (rows) => {
        for (const line of skipped) this.#warn(`warning: W&B: ${line}`);
        wandb.resumeFrom(rows as Record<string, unknown>[]);
      },
      (e) => {
        this.#warn(`warning: W&B: ${RUN_FILES.metrics} unreadable (${(e as Error).message})`);
        wandb.resumeFrom([]);
      },
    );
  }

  /** A step's row was written: it goes to W&B, and the step's episodes to OpenReward. */
  async step(row: { step: number }): Promise<void> {
    await this.#started;
    this.wandb?.log(row);
    this.uploads?.addStep(row.step);
  }

  /**
   * The run ended: the held-out evaluation becomes W&B summary values, the W&B run is finished
   * with `exitCode`, and queued uploads are sent (each waiting at most `timeoutMs`).
   */
  async finish(
    o: { exitCode: number; evaluation?: HeldOutEvaluation; timeoutMs?: number },
  ): Promise<void> {
    const timeoutMs = o.timeoutMs ?? 15_000;
    await this.#started;
    if (this.wandb) {
      if (o.evaluation) this.wandb.summary(evaluationSummary(o.evaluation));
      const { sent } = await this.wandb.finish(o.exitCode, timeoutMs);
      if (sent && this.wandb.url) this.#print(`W&B: ${this.wandb.url}`);
    }
    if (this.uploads) {
      await this.uploads.finish(timeoutMs);
      const { sent } = this.uploads.uploader.counts;
      if (sent > 0) {
        this.#print(
          `OpenReward: ${sent} rollouts uploaded (first: ${this.uploads.uploader.urls[0]})`,
        );
      }
    }
  }
}

/** The held-out evaluation as W&B summary values. */
export function evaluationSummary(e: HeldOutEvaluation): Record<string, number> {
  return {
    "held_out/episodes": e.episodes,
    "held_out/step": e.step,
    "held_out/base/success": e.base.success,
    "held_out/base/mean_reward": e.base.mean_reward,
    "held_out/trained/success": e.trained.success,
    "held_out/trained/mean_reward": e.trained.mean_reward,
  };
}
