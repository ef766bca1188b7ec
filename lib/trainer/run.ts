/**
 * A training run's life outside its steps: opening it (the run directory, the training client,
 * fresh or resumed), saving checkpoints, and what it gives back. The RL step loop (./loop.ts),
 * whatever feeds it groups, opens and checkpoints every run through these functions.
 *
 * @module
 */

import { loadTrainConfig, redactSecrets, type TrainConfig } from "../config/mod.ts";
import { ConfigError } from "../config/errors.ts";
import type { ServiceClient, TrainingClient } from "../tinker/mod.ts";
import { RunLog } from "./run_log.ts";
import {
  type CheckpointRecord,
  type HeldOutEvaluation,
  lockRunDir,
  readJsonFile,
  runPath,
  type StepMetrics,
} from "../rundir/mod.ts";

export type { StepMetrics } from "../rundir/mod.ts";

/** Options every RL run takes, whatever feeds it groups. */
export interface RunOptions {
  /** The Tinker session the run trains through. */
  service: ServiceClient;
  /** The run directory (metrics, checkpoints, rollouts). */
  logDir: string;
  /** Aborting saves the state after the current step and returns (SIGINT). */
  signal?: AbortSignal;
  /** Called after each step, e.g. for a progress bar. */
  onStep?: (m: StepMetrics) => void | Promise<void>;
  /** Called with a one-line notice of a step (e.g. why it trained nothing). */
  onNotice?: (line: string) => void;
  /** Called as the held-out evaluation's episodes finish (see ./evaluate.ts). */
  onEvaluation?: (p: { done: number; total: number }) => void;
  /** Called once the run knows where it starts (fresh or resumed). */
  onStart?: (
    info: { startStep: number; resumedFrom: CheckpointRecord | null; maxSteps: number },
  ) => void;
}

/** How a run ended. */
export interface RunResult {
  /** Steps completed in total (including steps before a resume). */
  steps: number;
  /** The checkpoint the run resumed from (null: a fresh start). */
  resumedFrom: CheckpointRecord | null;
  /** Whether it stopped early (Ctrl-C or SIGTERM). */
  interrupted: boolean;
  /** The last checkpoint written (final or interrupted). */
  checkpoint: CheckpointRecord | null;
  /** Every step's metrics, in order. */
  history: StepMetrics[];
  /** The held-out evaluation (also in the run's `eval.json`); absent when off or interrupted. */
  evaluation?: HeldOutEvaluation;
  /** Why no held-out evaluation ran, when none did (also in the run's `events.jsonl`). */
  evaluationSkipped?: string;
}

/** An opened run: its directory, training client, starting step and the result to fill in. */
export interface OpenedRun {
  /** The run directory's writer. */
  log: RunLog;
  /** The policy's training client. */
  training: TrainingClient;
  /** The first step to take (0, or the step after the resumed checkpoint). */
  startStep: number;
  /** How the run ended, filled in as it goes. */
  result: RunResult;
}

/**
 * The training client a run starts from: the run directory's own last checkpoint (exact, with
 * optimizer), else `checkpoints.resume_from` (weights only, the step count starts again, as
 * OpenClaw does), else a fresh LoRA. The directory is rewound to the starting step.
 */
export async function startTraining(
  cfg: TrainConfig,
  service: ServiceClient,
  log: RunLog,
): Promise<{ training: TrainingClient; startStep: number; resumedFrom: CheckpointRecord | null }> {
  const resumedFrom = log.lastCheckpoint();
  let training: TrainingClient;
  let startStep = 0;
  if (resumedFrom) {
    training = await service.createTrainingClientFromState(resumedFrom.state_path, {
      withOptimizer: true,
    });
    startStep = resumedFrom.step;
  } else if (cfg.checkpoints.resume_from) {
    training = await service.createTrainingClientFromState(cfg.checkpoints.resume_from);
  } else {
    training = await service.createLoraTrainingClient({
      baseModel: cfg.policy.model,
      rank: cfg.policy.lora_rank,
      seed: cfg.seed,
    });
  }
  await log.rewindTo(startStep);
  return { training, startStep, resumedFrom };
}

/**
 * Opens a run: its directory (with the resolved config written), its training client (see
 * {@link startTraining}), the `onStart` call and the result record the loop fills in.
 */
export async function openRun(
  cfg: TrainConfig,
  o: Pick<RunOptions, "service" | "logDir" | "onStart">,
): Promise<OpenedRun> {
  const log = await RunLog.open(o.logDir);
  const written = redactSecrets(cfg);
  if (log.lastCheckpoint()) {
    const before = await recordedConfig(o.logDir);
    const changed = before === null ? [] : configChanges(before, written);
    if (changed.length) {
      throw new ConfigError(
        `${o.logDir} was trained with other settings (${changed.slice(0, 6).join(", ")}${
          changed.length > 6 ? `, +${changed.length - 6} more` : ""
        }); rerun with the same settings to resume (only ${
          RESUMABLE_CHANGES.join(", ")
        } may change), --restart to start it over, or --branch-from ${o.logDir} with another --log-path`,
      );
    }
  }
  await log.writeConfig(written);
  const { training, startStep, resumedFrom } = await startTraining(cfg, o.service, log);
  o.onStart?.({ startStep, resumedFrom, maxSteps: cfg.max_steps });
  const result: RunResult = {
    steps: startStep,
    resumedFrom,
    interrupted: false,
    checkpoint: resumedFrom,
    history: [],
  };
  return { log, training, startStep, result };
}

/**
 * A run's recorded config as this version reads it: loaded through the config's own sources, so
 * a key renamed since (read through its alias) or a setting added since (its default) is no
 * change; as written when it no longer loads.
 */
async function recordedConfig(logDir: string): Promise<unknown> {
  const raw = await readJsonFile(runPath(logDir, "config"));
  if (raw === null) return null;
  try {
    return redactSecrets(await loadTrainConfig({ file: { path: runPath(logDir, "config") } }));
  } catch {
    return raw;
  }
}

/** Settings a resumed run may change: how long it runs, how it is evaluated and logged. */
export const RESUMABLE_CHANGES = ["max_steps", "eval.*", "logging.*", "checkpoints.save_every"];

/**
 * The settings (dotted paths) whose values differ between a run's recorded config and a new
 * one, leaving out {@link RESUMABLE_CHANGES}.
 *
 * @example
 * configChanges({ optimizer: { learning_rate: 1e-3 } }, { optimizer: { learning_rate: 2e-3 } });
 * // ["optimizer.learning_rate"]
 */
export function configChanges(before: unknown, after: unknown): string[] {
  const flat = (v: unknown, path: string, out: Map<string, string>) => {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      for (const [k, x] of Object.entries(v)) flat(x, path ? `${path}.${k}` : k, out);
    } else out.set(path, JSON.stringify(v ?? null));
    return out;
  };
  const a = flat(before, "", new Map());
  const b = flat(after, "", new Map());
  const free = (k: string) =>
    RESUMABLE_CHANGES.some((r) => r.endsWith(".*") ? k.startsWith(r.slice(0, -1)) : k === r);
  return [...new Set([...a.keys(), ...b.keys()])]
    .filter((k) => !free(k) && (a.get(k) ?? "null") !== (b.get(k) ?? "null"))
    .sort();
}

/**
 * Empties a run directory so the run starts over (`--restart`); a directory that is not a run's
 * (no config.json, no checkpoints.jsonl) is refused rather than deleted.
 */
export async function restartRun(dir: string): Promise<void> {
  const isRun = await Promise.all(
    (["config", "checkpoints", "metrics"] as const).map((f) =>
      Deno.stat(runPath(dir, f)).then(() => true, () => false)
    ),
  );
  if (!isRun.some((x) => x)) {
    try {
      await Deno.stat(dir);
    } catch {
      return; // nothing to start over
    }
    throw new ConfigError(`--restart: ${dir} is not a run directory; not deleting it`);
  }
  await lockRunDir(dir); // never delete a directory another trainer is writing
  await Deno.remove(dir, { recursive: true });
}

/**
 * The state a branch starts from (`--branch-from DIR`): DIR's last checkpoint, whose weights the
 * new run loads (`checkpoints.resume_from`) in its own directory.
 */
export async function branchPoint(dir: string): Promise<CheckpointRecord> {
  const last = (await RunLog.read(dir)).at(-1);
  if (!last) throw new ConfigError(`--branch-from: ${dir} has no checkpoint to branch from`);
  return last;
}

/** Saves the state (and, for the final one, sampler weights) and records it. */
export async function saveCheckpoint(
  log: RunLog,
  training: TrainingClient,
  step: number,
  kind: CheckpointRecord["kind"],
): Promise<CheckpointRecord> {
  const name = kind === "final" ? "final" : `${kind}_step_${String(step).padStart(6, "0")}`;
  const state_path = await training.saveState(name);
  const sampler_path = kind === "final" ? await training.saveWeightsForSampler(name) : undefined;
  const rec: CheckpointRecord = {
    name,
    step,
    state_path,
    ...(sampler_path ? { sampler_path } : {}),
    kind,
    time: new Date().toISOString(),
  };
  await log.appendCheckpoint(rec);
  return rec;
}
