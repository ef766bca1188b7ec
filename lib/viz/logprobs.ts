/**
 * Sampler vs learner log-probs of the sampled tokens of RL datums. The sampler's log-probs
 * ride in the datum (`loss_fn_inputs.logprobs`); the learner's come back from forward /
 * forward_backward (`loss_fn_outputs[i].logprobs`). Their gap is the off-policy mismatch that
 * importance sampling corrects, and it is the first thing to check when a run diverges.
 *
 * @module
 */

import type { Datum, ForwardBackwardOutput } from "../protocol/mod.ts";

/** Aligned log-probs of every sampled (action) token of a batch of datums. */
export interface LogprobPairs {
  sampler: number[];
  learner: number[];
  advantage: number[];
  /** Index of the datum each token belongs to. */
  datum: number[];
  /** Target position of each token within its datum. */
  position: number[];
}

/**
 * The sampled tokens' sampler and learner log-probs. A position is a sampled token when it has
 * a sampler log-prob or an advantage (prompt positions carry 0 for both).
 */
export function samplerLearnerPairs(datums: Datum[], out: ForwardBackwardOutput): LogprobPairs {
  if (out.loss_fn_outputs.length !== datums.length) {
    throw new Error(
      `samplerLearnerPairs: ${datums.length} datums but ${out.loss_fn_outputs.length} outputs`,
    );
  }
  const pairs: LogprobPairs = { sampler: [], learner: [], advantage: [], datum: [], position: [] };
  datums.forEach((d, i) => {
    const lps = d.loss_fn_inputs.logprobs?.data;
    const adv = d.loss_fn_inputs.advantages?.data ?? [];
    const learner = out.loss_fn_outputs[i].logprobs?.data;
    if (!lps) throw new Error(`samplerLearnerPairs: datum ${i} has no sampler logprobs`);
    if (!learner || learner.length !== lps.length) {
      throw new Error(
        `samplerLearnerPairs: output ${i} has ${
          learner?.length ?? 0
        } logprobs for ${lps.length} targets`,
      );
    }
    lps.forEach((lp, t) => {
      if (lp === 0 && (adv[t] ?? 0) === 0) return;
      pairs.sampler.push(lp);
      pairs.learner.push(learner[t]);
      pairs.advantage.push(adv[t] ?? 0);
      pairs.datum.push(i);
      pairs.position.push(t);
    });
  });
  return pairs;
}

/** How far two log-prob vectors of the same tokens are apart. */
export interface LogprobGap {
  tokens: number;
  /** mean(p − q): the k1 estimator of KL(p‖q) when the tokens were sampled from p. */
  kl_v1: number;
  /** mean(½(p − q)²): the k2 estimator, never negative. */
  kl_v2: number;
  max_abs_diff: number;
}

/**
 * KL estimates between the policy that sampled the tokens (`p`, e.g. the sampler) and another
 * (`q`, e.g. the learner), as the trainers log them (`kl_sample_train_v1/v2`).
 */
export function logprobGap(p: number[], q: number[]): LogprobGap {
  if (p.length !== q.length) throw new Error(`logprobGap: ${p.length} vs ${q.length} log-probs`);
  const d = p.map((x, i) => x - q[i]);
  const n = d.length;
  return {
    tokens: n,
    kl_v1: n ? d.reduce((a, x) => a + x, 0) / n : 0,
    kl_v2: n ? d.reduce((a, x) => a + 0.5 * x * x, 0) / n : 0,
    max_abs_diff: n ? Math.max(...d.map(Math.abs)) : 0,
  };
}
