/**
 * A sliding-window model's receptive field: with `L` layers and a window `W`, the output at
 * position `p` depends only on the tokens from `p − L·(W − 1)` on. So the gradient of a datum
 * whose first trained token is at `f` comes from its tokens from `f − L·(W − 1)` on, and the
 * learner trains on that tail alone (rotary positions are relative, so the tail's numbers are
 * the full sequence's up to rounding), after a forward-only pass over the whole datum for the
 * log-probs and the loss. A 55,000-token agent turn with a reply at its end then runs its
 * backward over about a thousand tokens.
 *
 * @module
 */

import type { ModelConfig } from "../model/config.ts";
import type { LossFnName } from "./losses.ts";
import type { LearnerDatum } from "./types.ts";

/**
 * Where the part of `d` that can carry a gradient starts: `f − L·(W − 1)` (at least 0) with `f`
 * the first token whose loss term can have a gradient; `d.tokens.length` if none can; 0 for a
 * model without a window (every token sees every earlier one).
 */
export function gradientStart(cfg: ModelConfig, d: LearnerDatum, loss: LossFnName): number {
  const n = d.tokens.length;
  if (!cfg.attentionWindow) return 0;
  const w = d.inputs.weights, a = d.inputs.advantages;
  const k = w?.shape[1] ?? 1;
  // The policy-gradient losses' terms are proportional to A; dro's pull towards q is not.
  const needsAdvantage = loss === "importance_sampling" || loss === "ppo" || loss === "cispo";
  let first = n;
  for (let i = 0; i < n && first === n; i++) {
    if (needsAdvantage && a && a.data[i] === 0) continue;
    if (!w) first = i;
    else for (let j = 0; j < k; j++) if (w.data[i * k + j] !== 0) first = i;
  }
  if (first === n) return n;
  return Math.max(0, first - cfg.nLayers * (cfg.attentionWindow - 1));
}

/** `d` from token `start` on: its tokens and every per-token input cut alike. */
export function datumTail(d: LearnerDatum, start: number): LearnerDatum {
  const inputs: LearnerDatum["inputs"] = {};
  for (const [name, t] of Object.entries(d.inputs)) {
    const k = t.shape[1] ?? 1;
    inputs[name] = {
      shape: [t.shape[0] - start, ...t.shape.slice(1)],
      data: t.data.slice(start * k),
    };
  }
  return { tokens: d.tokens.slice(start), inputs };
}
