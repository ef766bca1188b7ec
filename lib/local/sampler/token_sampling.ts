/**
 * Host-side token choice from one row of log-probabilities: temperature, top-k, top-p, and
 * the top-k listing used for prompt logprobs. Host-side because the decision is per row and
 * cheap (one vocabulary pass), and because it keeps the draw reproducible from a seeded
 * {@link Rng} independently of the device.
 *
 * @module
 */

import type { Rng } from "../../util/random.ts";

/** The knobs of one draw; see `SampleJob` for their meaning. */
export interface DrawParams {
  temperature: number;
  topK: number;
  topP: number;
}

/**
 * Draws a token id from `logprobs` (one vocabulary row, log-softmax of the raw logits).
 *
 * Order of operations as in vLLM/Hugging Face: temperature scales the logits, then top-k
 * and top-p restrict the candidates, then one uniform draw picks from the renormalised
 * rest. Temperature 0 is greedy (argmax, lowest id on ties) and consumes no randomness.
 */
export function drawToken(logprobs: Float32Array, params: DrawParams, rng: Rng): number {
  if (params.temperature === 0) return argmax(logprobs);
  const candidates = restrictCandidates(logprobs, params);
  const weights = new Float64Array(candidates.length);
  const top = logprobs[argmax(logprobs)]; // shift the exponent so the best weight is 1
  let total = 0;
  for (let i = 0; i < candidates.length; i++) {
    weights[i] = Math.exp((logprobs[candidates[i]] - top) / params.temperature);
    total += weights[i];
  }
  const kept = params.topP < 1 ? nucleusSize(weights, total * params.topP) : weights.length;
  let mass = 0;
  for (let i = 0; i < kept; i++) mass += weights[i];
  let u = rng.uniform() * mass;
  for (let i = 0; i < kept; i++) {
    u -= weights[i];
    if (u < 0) return candidates[i];
  }
  return candidates[kept - 1]; // only reached through rounding at the very end of the mass
}

/** Index of the largest entry (the first one on ties). */
export function argmax(xs: Float32Array): number {
  let best = 0;
  for (let i = 1; i < xs.length; i++) if (xs[i] > xs[best]) best = i;
  return best;
}

/** The `k` most likely `[tokenId, logprob]` pairs of a row, best first (ties: lower id). */
export function topEntries(logprobs: Float32Array, k: number): [number, number][] {
  return Array.from(sortedByLogprob(logprobs).subarray(0, k), (id) => [id, logprobs[id]]);
}

/**
 * Candidate ids for a draw. Unrestricted draws keep vocabulary order (no sort); restricted
 * ones are sorted best-first and cut to top-k, and top-p later cuts a prefix of them.
 */
function restrictCandidates(logprobs: Float32Array, params: DrawParams): Int32Array {
  const restricted = (params.topK > 0 && params.topK < logprobs.length) || params.topP < 1;
  if (!restricted) {
    const ids = new Int32Array(logprobs.length);
    for (let i = 0; i < ids.length; i++) ids[i] = i;
    return ids;
  }
  const sorted = sortedByLogprob(logprobs);
  return params.topK > 0 ? sorted.subarray(0, params.topK) : sorted;
}

/** Length of the shortest best-first prefix of `weights` whose sum reaches `threshold`. */
function nucleusSize(weights: Float64Array, threshold: number): number {
  let cum = 0;
  for (let i = 0; i < weights.length; i++) {
    cum += weights[i];
    if (cum >= threshold) return i + 1;
  }
  return weights.length;
}

/** Token ids sorted by descending log-probability (stable, so ties keep id order). */
function sortedByLogprob(logprobs: Float32Array): Int32Array {
  const ids = new Int32Array(logprobs.length);
  for (let i = 0; i < ids.length; i++) ids[i] = i;
  return ids.sort((a, b) => logprobs[b] - logprobs[a] || a - b);
}
