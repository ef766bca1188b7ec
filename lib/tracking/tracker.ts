/**
 * What a training command does with W&B, in one place for `train` (every mode and source, and
 * so every run of the run API, which spawns it) and `sft`: open the mirror from the settings
 * before the run, align it with the run directory once the run knows where it starts, forward
 * every metrics row, put the held-out evaluation in the summary, finish with the exit code.
 *
 * @module
 */

import { join } from "node:path";
import type { TrainConfig } from "../config/schema.ts";
import { readJsonl } from "../trainer/run_log.ts";
import type { HeldOutEvaluation } from "../trainer/evaluate.ts";
import { decideWandb, type RunNames } from "./settings.ts";
import { WandbRun, type WandbRunOptions } from "./wandb.ts";

/** A run's names and W&B switch from its training config (`logging`). */
export function runNames(cfg: TrainConfig): RunNames {
  return {
    useWandb: cfg.logging.use_wandb,
    project: cfg.logging.project_name,
    runName: cfg.logging.run_name,
  };
}

/**
 * Opens the W&B mirror of the run in `runDir` when the environment and `names` ask for it
 * (else null, after printing why when W&B was asked for but is off). A bad W&B variable or
 * `use_wandb: true` without a key throws a ConfigError.
 */
export async function openWandb(o: {
  runDir: string;
  config: Record<string, unknown>;
  names: RunNames;
  env?: Record<string, string | undefined>;
  print?: (line: string) => void;
  /** Where the warning lines go (default: stderr). */
  warn?: (line: string) => void;
  retry?: Pick<WandbRunOptions, "backoffMs" | "maxBackoffMs" | "timeoutMs">;
}): Promise<WandbRun | null> {
  const print = o.print ?? ((line: string) => console.log(line));
  const decision = decideWandb(o.env ?? Deno.env.toObject(), o.names, o.runDir);
  if (!decision.target) {
    if (decision.why) print(decision.why);
    return null;
  }
  await Deno.mkdir(o.runDir, { recursive: true });
  const run = await WandbRun.open({
    target: decision.target,
    runDir: o.runDir,
    config: o.config,
    warn: o.warn ?? ((line: string) => console.error(line)),
    ...o.retry,
  });
  print(
    `W&B: run ${run.id} in project ${decision.target.project} at ${decision.target.baseUrl}` +
      ` (id kept in ${join(o.runDir, "wandb.json")})`,
  );
  return run;
}

/** Aligns the mirror with the rows the run directory holds now (after a resume's rewind). */
export async function resumeWandb(run: WandbRun, runDir: string): Promise<void> {
  const rows = await readJsonl(join(runDir, "metrics.jsonl"));
  run.resumeFrom(rows as Record<string, unknown>[]);
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

/** Finishes the mirror and prints where the run is (or what was not sent). */
export async function finishWandb(
  run: WandbRun,
  exitCode: number,
  print: (line: string) => void = (line) => console.log(line),
  timeoutMs?: number,
): Promise<void> {
  const { sent } = await run.finish(exitCode, timeoutMs);
  if (sent && run.url) print(`W&B: ${run.url}`);
}
