/**
 * Pretraining of the local models: batches of transcripts trained with `cross_entropy` over a
 * Tinker training client (a full fine-tune on the local backend) by the one supervised loop
 * (lib/trainer/supervised.ts), with a warmup + cosine learning-rate schedule.
 *
 * Each step's datums are sorted by length and sent in small forward_backward calls (their
 * gradients add up until the step's optim_step, as on Tinker): short transcripts then share
 * short padded blocks, and one call's activations stay small.
 *
 * @module
 */

import type { TrainingClient } from "../tinker/mod.ts";
import type { Datum } from "../protocol/mod.ts";
import { type SupervisedStepMetrics, trainSupervised } from "../trainer/supervised.ts";
import { ChatMLRenderer } from "../renderers/chatml.ts";
import type { Tokenizer } from "../tokenizers/types.ts";
import {
  exampleDatum,
  type MixEntry,
  PRETRAIN_MIX,
  type Transcript,
  transcriptExample,
  TranscriptStream,
} from "./transcripts.ts";

/** Settings of a pretraining run. */
export interface PretrainOptions {
  steps: number;
  /** Transcripts per optimizer step. */
  batchSize: number;
  /** Peak Adam learning rate. */
  learningRate: number;
  /** Steps of linear warmup before the cosine decay. */
  warmupSteps: number;
  /** The schedule decays to this fraction of the peak. */
  minLearningRateRatio: number;
  /** Seeds the transcript stream. */
  seed: number;
  /** Environments and their shares; default {@link PRETRAIN_MIX}. */
  mix?: readonly MixEntry[];
  /** Share of GuessTheNumber transcripts played by bisection (default 0: none). */
  bisectShare?: number;
  /** Chance that a turn of a tool transcript is an untrained mistake (default 0: none). */
  mistakeShare?: number;
  /** Datums per forward_backward call. */
  datumsPerCall: number;
  /**
   * Wall-clock budget in seconds. From the measured step time the run shortens its plan to the
   * steps that fit ({@link fitSteps}), so the cosine schedule ends at its floor inside the
   * budget; no step starts after it, and the weights are saved either way.
   */
  maxSeconds?: number;
  /** Renders transcripts to tokens: the trained model's tokenizer (default bytes). */
  renderer?: ChatMLRenderer<Tokenizer>;
}

/** The learning rate of `step` (1-based): linear warmup, then cosine down to the floor. */
export function learningRateAt(step: number, o: PretrainOptions): number {
  if (step <= o.warmupSteps) return o.learningRate * step / Math.max(1, o.warmupSteps);
  const progress = (step - o.warmupSteps) / Math.max(1, o.steps - o.warmupSteps);
  const cosine = 0.5 * (1 + Math.cos(Math.PI * Math.min(1, progress)));
  return o.learningRate * (o.minLearningRateRatio + (1 - o.minLearningRateRatio) * cosine);
}

/** Steps measured before the plan is fitted to the time budget. */
const FIT_AFTER_STEPS = 5;
/**
 * Share of the time budget measured before the plan is fitted. The plan only shrinks, so a pace
 * read off a few slow first steps (a busy machine for a minute) would cut a long run for good:
 * a 75-minute run once stopped after 21 minutes that way.
 */
const FIT_AFTER_BUDGET_SHARE = 0.1;

/**
 * The planned step count after `done` steps took `elapsedSeconds`: `planned`, or fewer when
 * the budget will not hold them at the pace so far (never fewer than the next step), once a tenth
 * of the budget has passed. Only shrinks, so the cosine never climbs back. A run cut by the clock
 * with the learning rate still near its peak ends on noisy weights, which is why the schedule is
 * fitted rather than cut.
 *
 * @example
 * fitSteps(400, 20, 160, 1440); // 180: 8 s a step, 24 minutes
 */
export function fitSteps(
  planned: number,
  done: number,
  elapsedSeconds: number,
  maxSeconds: number,
): number {
  if (done < FIT_AFTER_STEPS || elapsedSeconds < FIT_AFTER_BUDGET_SHARE * maxSeconds) {
    return planned;
  }
  const fits = Math.floor(maxSeconds / (elapsedSeconds / done));
  // Never above `planned`: a plan raised back to the next step would never end, and the run
  // would go on at the floor learning rate until the clock stopped it.
  return Math.min(planned, Math.max(done + 1, fits));
}

/** The datums of a batch of transcripts, longest first, split into forward_backward calls. */
export function batchCalls(
  transcripts: Transcript[],
  datumsPerCall: number,
  renderer: ChatMLRenderer<Tokenizer> = new ChatMLRenderer(),
): Datum[][] {
  const data = transcripts.map((t) => exampleDatum(transcriptExample(t, renderer)));
  data.sort((a, b) => b.loss_fn_inputs.weights.data.length - a.loss_fn_inputs.weights.data.length);
  const calls: Datum[][] = [];
  for (let i = 0; i < data.length; i += datumsPerCall) calls.push(data.slice(i, i + datumsPerCall));
  return calls;
}

/**
 * Runs the pretraining steps on `training` through the one supervised loop
 * ({@link trainSupervised}): each step's batch of transcripts, its learning rate from the
 * schedule, and no step past the time budget. Returns the steps' metrics (fewer than `steps`
 * when they did not fit in `maxSeconds`).
 */
export async function pretrain(
  training: TrainingClient,
  opts: PretrainOptions,
  onStep?: (m: SupervisedStepMetrics) => void | Promise<void>,
): Promise<SupervisedStepMetrics[]> {
  const renderer = opts.renderer ?? new ChatMLRenderer();
  const stream = new TranscriptStream(opts.seed, opts.mix ?? PRETRAIN_MIX, {
    renderer,
    bisectShare: opts.bisectShare,
    mistakeShare: opts.mistakeShare,
  });
  const start = performance.now();
  let planned = opts.steps;
  // The first step compiles the learner's programs (tens of seconds on a loaded machine): the
  // pace is measured from its end, or it would shrink the plan to a fraction of what fits.
  let firstStepEnd: number | null = null;
  return await trainSupervised({
    training,
    steps: opts.steps,
    batch: async (step) => {
      const elapsed = (performance.now() - start) / 1000;
      if (opts.maxSeconds !== undefined) {
        if (elapsed > opts.maxSeconds) return null;
        if (step === 2) firstStepEnd = performance.now();
        if (firstStepEnd !== null) {
          const first = (firstStepEnd - start) / 1000;
          const since = (performance.now() - firstStepEnd) / 1000;
          planned = 1 + fitSteps(planned - 1, step - 2, since, opts.maxSeconds - first);
        }
      }
      if (step > planned) return null;
      const calls = batchCalls(await stream.next(opts.batchSize), opts.datumsPerCall, renderer);
      const lr = learningRateAt(step, { ...opts, steps: planned });
      return { calls, adam: { learning_rate: lr, beta1: 0.9, beta2: 0.95, eps: 1e-8 } };
    },
    onStep,
  });
}
