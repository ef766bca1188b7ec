/**
 * The RL step loop: the one `for step` of RL training, whatever feeds it. A {@link GroupSource}
 * hands over each step's groups (environments in `sync`, `stream` or `async` mode, an
 * environment mix, or the proxy's agent sessions), with the evidence it already gathered; the
 * loop composes advantages once, in the step's update (./update.ts), trains, swaps the sampler,
 * writes the metrics row, the rollout store (trained, excluded and failed episodes, each with
 * its reason), the timing spans, periodic and final checkpoints, and ends with a held-out
 * evaluation when the run has one.
 *
 * A run that cannot train fails loudly (./failures.ts): a step whose every rollout failed, or
 * `pipeline.max_steps_without_datums` steps in a row with nothing to train, stop the run with
 * one line naming the first error and the setting to change; the run directory says so.
 *
 * @module
 */

import type { EpisodeGroup } from "../rl/types.ts";
import { rolloutRecords } from "../rl/records.ts";
import type { SamplingClient } from "../tinker/mod.ts";
import { type HeldOutEvaluation, writeEvaluation } from "../rundir/mod.ts";
import {
  excludedGroupRecords,
  failedEpisodeRecords,
  type FailureSettings,
  nothingTrainedReason,
  StepFailures,
} from "./failures.ts";
import type { GroupSource } from "./source.ts";
import { advantageMetrics, episodeSucceeded, rolloutMetrics } from "./metrics.ts";
import {
  type OpenedRun,
  type RunOptions,
  type RunResult,
  saveCheckpoint,
  type StepMetrics,
} from "./run.ts";
import { type OptimizerSettings, type Scoring, StepUpdate } from "./update.ts";

/** Why a run stopped before a step trained since its start wrote no checkpoint (`events.jsonl`). */
const NOTHING_TO_SAVE =
  "stopped before a step trained: the state is the one the run started from, and a rerun starts there";

/** The loop's settings, resolved from the config by `prepareRun`. */
export interface LoopSettings {
  /** The optimizer's settings. */
  optimizer: OptimizerSettings;
  /** What a failed rollout does to the run. */
  failures: FailureSettings;
  /** A periodic checkpoint every this many steps (`checkpoints.save_every`; 0: none). */
  saveEvery: number;
  /** Groups per forward_backward as they come in (`stream`); Infinity: one per step. */
  minibatchGroups: number;
}

/** What the loop needs besides the run's options. */
export interface LoopOptions extends RunOptions {
  /** Steps the run trains in all (resumed steps included). */
  steps: number;
  /** The loop's settings. */
  settings: LoopSettings;
  /** Held-out episodes (`eval.episodes`; 0: no held-out evaluation). */
  heldOutEpisodes: number;
  /** The opened run. */
  run: OpenedRun;
  /** Where each step's groups come from. */
  source: GroupSource;
  /** The sampler of the starting weights (version `run.startStep`). */
  sampler: SamplingClient;
  /** The method, the evidence it needs and where it comes from. */
  scoring: Scoring;
  /** `performance.now()` at the run's start: spans are measured from it. */
  t0: number;
  /** The held-out evaluation of the trained sampler, or why there is none. */
  evaluate: ((trained: SamplingClient, step: number) => Promise<HeldOutEvaluation>) | string;
}

/**
 * Runs steps `startStep + 1 … max_steps` of an opened run, then its final checkpoint and
 * held-out evaluation.
 *
 * @example
 * const run = await openRun(prepared.config, o);
 * await runSteps({ ...o, steps: prepared.steps, settings: prepared.loop, heldOutEpisodes: 0,
 *   run, source, sampler, scoring, t0, evaluate: "no environment" });
 */
export async function runSteps(o: LoopOptions): Promise<RunResult> {
  const { log, result } = o.run;
  await log.writeStatus({ state: "running", step: o.run.startStep });
  try {
    await trainSteps(o);
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    await log.writeStatus({ state: "failed", step: result.steps, error: error.split("\n")[0] });
    throw e;
  }
  await log.writeStatus({
    state: result.interrupted ? "interrupted" : "completed",
    step: result.steps,
  });
  return result;
}

async function trainSteps(o: LoopOptions): Promise<void> {
  const { steps, settings, run: { log, training, startStep, result }, source, t0 } = o;
  const { optimizer, saveEvery } = settings;
  const failures = new StepFailures(settings.failures);
  const minibatch = settings.minibatchGroups;
  let sampler = o.sampler;
  try {
    for (let step = startStep + 1; step <= steps; step++) {
      if (o.signal?.aborted) {
        result.interrupted = true;
        break;
      }
      const tStep = performance.now();
      const update = new StepUpdate({ training, ...o.scoring, optimizer, t0 });
      // Streamed minibatches start training on the first groups while the rest still play.
      let pending: EpisodeGroup[] = [];
      const taken = await source.take(step, (g) => {
        pending.push(g);
        if (pending.length >= minibatch) update.add(pending.splice(0));
      }, o.signal);
      if (taken === null) {
        result.interrupted = true;
        break;
      }
      if (minibatch === Infinity) pending = taken.groups;
      if (pending.length > 0 || taken.groups.length === 0) update.add(pending, taken.evidence);
      const tSampled = performance.now();
      const out = await update.finish().catch(async (e) => {
        // Stopping, the step's scoring can fail: its backend drops the samples queued when the
        // run stops (a judge's among them). Before its optimizer step the weights are the last
        // step's, so the step is left untrained and the run saves the steps it recorded.
        if (!o.signal?.aborted || update.optimizing) throw e;
        const why = e instanceof Error ? e.message.split("\n")[0] : String(e);
        await log.appendEvent(step, "step_not_trained", `the run stopped while scoring it: ${why}`);
        return null;
      });
      if (out === null) {
        result.interrupted = true;
        break;
      }
      const tTrained = performance.now();
      // A step with nothing to train leaves the weights as they were: same sampler, next version.
      sampler = out.sampler ?? sampler;
      source.setSampler(sampler, step);
      await source.afterStep?.(step, out);

      const row: StepMetrics = {
        step,
        "progress/batch": step,
        "progress/done_frac": step / steps,
        "optim/lr": optimizer.adam.learning_rate,
        "optim/weight_decay": optimizer.adam.weight_decay,
        ...rolloutMetrics(taken.groups),
        ...taken.metrics,
        ...advantageMetrics(out.composed.advantageStats),
        ...out.composed.metrics,
        ...out.metrics,
        "train/datums": out.datums,
        "excluded_groups/total": taken.excluded?.length ?? 0,
        "time/sample": (tSampled - tStep) / 1000,
        "time/train": (tTrained - tSampled) / 1000,
        "time/step": (tTrained - tStep) / 1000,
      };
      await log.writeRollouts(step, [
        ...rolloutRecords(step, out.groups, episodeSucceeded),
        ...excludedGroupRecords(step, taken.excluded ?? []),
        ...failedEpisodeRecords(step, taken.failed ?? []),
      ]);
      await log.appendSpans(step, [...taken.spans, ...out.spans, {
        name: "step",
        start: tStep - t0,
        end: tTrained - t0,
      }]);
      await log.appendMetrics(row);
      result.history.push(row);
      result.steps = step;
      await o.onStep?.(row);
      const idle = nothingTrainedReason(taken, out);
      if (idle !== null) {
        await log.appendEvent(step, "nothing_trained", idle);
        o.onNotice?.(`step ${step} trained nothing: ${idle}`);
      }
      // Stops the run (after the step is recorded) when it cannot train.
      failures.check(step, taken, idle, out.groups);

      if (
        saveEvery > 0 && step % saveEvery === 0 && step < steps
      ) {
        result.checkpoint = await saveCheckpoint(log, training, step, "periodic");
      }
    }
  } finally {
    await source.close({ interrupted: result.interrupted });
  }

  if (result.steps > startStep) {
    result.checkpoint = await saveCheckpoint(
      log,
      training,
      result.steps,
      result.interrupted ? "interrupted" : "final",
    );
  } else if (result.interrupted) {
    // Stopped before a step trained: the state is the one the run started from (its last
    // checkpoint, `checkpoints.resume_from` or the seeded new adapter), and a rerun starts there
    // exactly. Writing it again would only spend the stop's seconds (the first save is slow).
    await log.appendEvent(startStep, "nothing_to_save", NOTHING_TO_SAVE);
  }
  if (result.interrupted || result.steps === startStep) return;
  if (typeof o.evaluate === "string") result.evaluationSkipped = o.evaluate;
  else if (o.heldOutEpisodes === 0) result.evaluationSkipped = "eval.episodes is 0";
  else {
    const evaluation = await o.evaluate(sampler, result.steps);
    // Ctrl-C during the evaluation: a partial score is not written as the run's.
    if (o.signal?.aborted) result.evaluationSkipped = "interrupted";
    else {
      result.evaluation = evaluation;
      await writeEvaluation(log.dir, evaluation);
    }
  }
  if (result.evaluationSkipped) {
    await log.appendEvent(result.steps, "evaluation_skipped", result.evaluationSkipped);
  }
}
