/**
 * Supervised training over a Tinker client, the one loop of `deno task sft` and of pretraining
 * (lib/pretrain/train.ts): each step's datums trained with `cross_entropy`. For fine-tuning,
 * prompt/completion examples become datums with weight 0 on the prompt and 1 on the completion.
 *
 * @module
 */

import { datum, type TrainingClient } from "../tinker/mod.ts";
import type { AdamParams, Datum } from "../protocol/mod.ts";
import type { Awaitable } from "../rl/types.ts";
import { checkDatum } from "../datums/mod.ts";
import { sum } from "../util/mod.ts";
import type { PromptCompletion } from "../datasets/types.ts";

/** Text to token ids, e.g. a {@link ByteTokenizer}. */
export interface Encoder {
  /** Token ids of `text`. */
  encode(text: string): number[];
}

/**
 * The datum of one example: inputs are all tokens but the last, targets are shifted by one,
 * and only completion tokens carry weight.
 */
export function supervisedDatum(tokenizer: Encoder, ex: PromptCompletion): Datum {
  const prompt = tokenizer.encode(ex.prompt);
  const tokens = [...prompt, ...tokenizer.encode(ex.completion)];
  const weights = tokens.slice(1).map((_, i) => (i + 1 >= prompt.length ? 1 : 0));
  return checkDatum(datum(tokens.slice(0, -1), { target_tokens: tokens.slice(1), weights }));
}

/** The datums of one supervised step and how the optimizer takes it. */
export interface SupervisedBatch {
  /**
   * The step's forward_backward calls: their gradients add up until the step's optim_step (as
   * on Tinker), so a large batch can be sent in calls that each stay small.
   */
  calls: Datum[][];
  /** Adam's settings of this step (a schedule may change the learning rate step by step). */
  adam: AdamParams & { learning_rate: number };
}

/**
 * Metrics of one supervised step: the same keys for every supervised run (`deno task sft`,
 * `deno task pretrain`), and `optim/lr` and `time/step` as the RL step loop names them.
 */
export interface SupervisedStepMetrics {
  /** The step (from 1). */
  step: number;
  /** Mean negative log-likelihood per trained token (weight 1: a completion's, an action's). */
  "train/loss_per_token": number;
  /** Tokens that carried weight. */
  "train/trained_tokens": number;
  /** Every target token of the step's datums, weighted or not. */
  "train/tokens": number;
  /** The step's learning rate. */
  "optim/lr": number;
  /** Seconds of the step. */
  "time/step": number;
}

/**
 * The one supervised loop: step by step, the step's batch (`batch(step)`; null ends the run
 * early), its forward_backward calls with `cross_entropy` and its optim_step submitted together
 * (pipelined), and awaited before the next batch is built.
 *
 * @example
 * await trainSupervised({
 *   training, steps: 100,
 *   batch: () => ({ calls: [examples.map((ex) => supervisedDatum(tok, ex))],
 *     adam: { learning_rate: 1e-3 } }),
 * });
 */
export async function trainSupervised(opts: {
  training: TrainingClient;
  steps: number;
  batch: (step: number) => Awaitable<SupervisedBatch | null>;
  onStep?: (m: SupervisedStepMetrics) => Awaitable<void>;
}): Promise<SupervisedStepMetrics[]> {
  const history: SupervisedStepMetrics[] = [];
  for (let step = 1; step <= opts.steps; step++) {
    const t0 = performance.now();
    const batch = await opts.batch(step);
    if (batch === null) break;
    const outs = batch.calls.map((c) => opts.training.forwardBackward(c, "cross_entropy"));
    const optim = opts.training.optimStep(batch.adam);
    let loss = 0;
    for (const o of outs) loss += (await o).metrics["loss:sum"];
    await optim;
    const weights = batch.calls.flat().map((d) => d.loss_fn_inputs.weights.data);
    const trained = weights.reduce((n, w) => n + sum(w), 0);
    const m: SupervisedStepMetrics = {
      step,
      "train/loss_per_token": loss / trained,
      "train/trained_tokens": trained,
      "train/tokens": weights.reduce((n, w) => n + w.length, 0),
      "optim/lr": batch.adam.learning_rate,
      "time/step": (performance.now() - t0) / 1000,
    };
    history.push(m);
    await opts.onStep?.(m);
  }
  return history;
}
