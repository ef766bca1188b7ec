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
import { hostTensor, type NamedTensors } from "../tensors.ts";

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

/**
 * {@link foldLora} on host tensors, for engines that take host weights (ONNX Runtime): every
 * adapter in `adapter` is folded, `W' = W + scale·A@B`, accumulated in double and rounded
 * once. Returns new tensors for the folded weights; `base` is not modified.
 */
export function foldLoraOnHost(
  base: NamedTensors,
  adapter: NamedTensors,
  scale: number,
): NamedTensors {
  const out: NamedTensors = new Map(base);
  for (const [key, a] of adapter) {
    if (!key.endsWith(".lora_a")) continue;
    const path = key.slice(0, -".lora_a".length);
    const b = adapter.get(`${path}.lora_b`), w = base.get(`${path}.weight`);
    if (!b || !w) throw new Error(`lora: adapter ${path} has no lora_b or no base weight`);
    // An untrained adapter's B is zero (a fresh LoRA, before its first step): W' is W, and the
    // copy and matmul below would block the event loop for nothing (a second at step 0).
    if (b.data.every((x) => x === 0)) continue;
    const [inF, rank] = a.shape, outF = b.shape[1];
    const folded = new Float32Array(w.data);
    const row = new Float64Array(outF);
    for (let i = 0; i < inF; i++) {
      row.fill(0);
      for (let k = 0; k < rank; k++) {
        const aik = a.data[i * rank + k];
        if (aik === 0) continue;
        const bk = b.data.subarray(k * outF, (k + 1) * outF);
        for (let j = 0; j < outF; j++) row[j] += aik * bk[j];
      }
      for (let j = 0; j < outF; j++) folded[i * outF + j] += scale * row[j];
    }
    out.set(`${path}.weight`, hostTensor(w.shape, folded));
  }
  return out;
}
