/**
 * Folding LoRA adapters into their base weights: `W' = W + scale·A@B` is the same linear map
 * as `x@W + scale·(x@A)@B`, up to float rounding, and costs one matmul per layer instead of two
 * extra per token. The learner folds where that is cheaper for training; the sampler folds every
 * adapter once, so decoding costs what the bare model costs.
 *
 * @module
 */

import { numpy as np } from "@jax-js/jax";
import type { ParamTree } from "../engine.ts";

/** Decides, from the adapter's `[in, r]` and `[r, out]` sizes, whether to fold it. */
export type FoldPredicate = (inFeatures: number, rank: number, outFeatures: number) => boolean;

/**
 * Returns `[base with the chosen adapters folded in, the adapters left unfolded]`.
 * Works on traced arrays inside `jit` as on concrete ones; outside `jit`, the folded base
 * weights and their adapters are consumed (jax-js ownership), the others are passed through.
 */
export function foldLora(
  base: ParamTree,
  lora: ParamTree,
  scale: number,
  shouldFold: FoldPredicate = () => true,
): [ParamTree, ParamTree] {
  const folded: ParamTree = { ...base };
  const rest: ParamTree = {};
  for (const key of Object.keys(lora).filter((k) => k.endsWith(".lora_a"))) {
    const path = key.slice(0, -".lora_a".length);
    const a: np.Array = lora[key], b: np.Array = lora[`${path}.lora_b`];
    const [inF, rank] = a.shape, outF = b.shape[1];
    if (shouldFold(inF, rank, outF)) {
      folded[`${path}.weight`] = base[`${path}.weight`].add(np.matmul(a, b).mul(scale));
    } else {
      rest[key] = a;
      rest[`${path}.lora_b`] = b;
    }
  }
  return [folded, rest];
}
