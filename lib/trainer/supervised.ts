/**
 * Supervised fine-tuning over a Tinker client: prompt/completion examples become datums with
 * weight 0 on the prompt and 1 on the completion, trained with `cross_entropy`.
 *
 * @module
 */

import { datum, type TrainingClient } from "../tinker/mod.ts";
import type { Datum } from "../protocol/mod.ts";
import { checkDatum } from "../datums/mod.ts";
import { sum } from "../util/mod.ts";

/** One supervised training example as text: the completion is trained on, the prompt is not. */
export interface PromptCompletion {
  prompt: string;
  completion: string;
}

/** Text to token ids, e.g. a {@link ByteTokenizer}. */
export interface Encoder {
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

/** Metrics of one supervised step. */
export interface SupervisedStepMetrics {
  step: number;
  /** Mean negative log-likelihood per completion token. */
  "train/loss_per_token": number;
  "train/completion_tokens": number;
  "time/step_s": number;
}

/**
 * Runs `steps` steps of supervised training: each step's forward_backward and optim_step are
 * submitted together (pipelined) and awaited before the next batch.
 */
export async function trainSupervised(opts: {
  training: TrainingClient;
  tokenizer: Encoder;
  batch: (step: number) => PromptCompletion[];
  steps: number;
  learningRate: number;
  onStep?: (m: SupervisedStepMetrics) => void | Promise<void>;
}): Promise<SupervisedStepMetrics[]> {
  const history: SupervisedStepMetrics[] = [];
  for (let step = 1; step <= opts.steps; step++) {
    const t0 = performance.now();
    const data = opts.batch(step).map((ex) => supervisedDatum(opts.tokenizer, ex));
    const fb = opts.training.forwardBackward(data, "cross_entropy");
    const optim = opts.training.optimStep({ learning_rate: opts.learningRate });
    const out = await fb;
    await optim;
    const tokens = data.reduce((n, d) => n + sum(d.loss_fn_inputs.weights.data), 0);
    const m: SupervisedStepMetrics = {
      step,
      "train/loss_per_token": out.metrics["loss:sum"] / tokens,
      "train/completion_tokens": tokens,
      "time/step_s": (performance.now() - t0) / 1000,
    };
    history.push(m);
    await opts.onStep?.(m);
  }
  return history;
}
