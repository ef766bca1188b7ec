/**
 * Decoupled AdamW over host tensors, with torch.optim.AdamW's exact update order, and
 * optional global-norm gradient clipping (torch's `clip_grad_norm_`) applied first:
 *
 * ```
 * g ← g · min(1, clip / (‖g‖₂ + 1e-6))        (only when clip > 0; ‖g‖ over all tensors)
 * p ← p · (1 − lr·wd)
 * m ← β1·m + (1 − β1)·g;   v ← β2·v + (1 − β2)·g²
 * p ← p − (lr / (1 − β1ᵗ)) · m / (√v / √(1 − β2ᵗ) + eps)
 * ```
 *
 * The learner's compute runs on ONNX Runtime, but its trained tensors (an adapter, or a small
 * model's weights: about a million floats) live on the host, where one pass over them costs a
 * few milliseconds. Scalars are computed in float64, elements rounded to float32 once per step.
 *
 * @module
 */

import { hostTensor, type NamedTensors } from "../tensors.ts";
import { ADAM_DEFAULTS, type AdamParams, type OptimizerState } from "./types.ts";

/** Adam's moments (same names and sizes as the parameters) and the number of steps taken. */
export interface AdamState {
  /** First moments. */
  m: Map<string, Float32Array>;
  /** Second moments. */
  v: Map<string, Float32Array>;
  /** Steps taken so far (t − 1 for the next step). */
  step: number;
}

/** Zero moments for `params`, step 0. */
export function initAdamState(params: NamedTensors): AdamState {
  const zeros = () => new Map([...params].map(([k, p]) => [k, new Float32Array(p.data.length)]));
  return { m: zeros(), v: zeros(), step: 0 };
}

/** The largest finite float32. */
const FLOAT32_MAX = 3.4028234663852886e38;

/**
 * Whether a step with this gradient norm would overflow float32: the norm itself, or its square,
 * which bounds every element of Adam's second moment (`v ← β2·v + (1 − β2)·g²`, `g² ≤ ‖g‖²`).
 * A second moment at Infinity would freeze its weight silently (`m / √v` = 0 ever after), so
 * such a step is refused, as the jax-js learner's float32 norm refused it.
 *
 * @example
 * gradientOverflows(1e19); // false
 * gradientOverflows(5.7e31); // true: its square is past float32
 */
export function gradientOverflows(norm: number): boolean {
  return !(norm * norm <= FLOAT32_MAX);
}

/** Global L2 norm of gradients, summed in float64. */
export function globalNorm(grads: Iterable<Float32Array>): number {
  let s = 0;
  for (const g of grads) for (let i = 0; i < g.length; i++) s += g[i] * g[i];
  return Math.sqrt(s);
}

/**
 * One AdamW step, in place on `params`' data and `state`. `hp` fields that are absent take
 * Tinker's defaults. Returns the global gradient norm before clipping; if a step with it would
 * overflow float32 ({@link gradientOverflows}), nothing is changed and the caller decides.
 */
export function adamStep(
  params: NamedTensors,
  grads: ReadonlyMap<string, Float32Array>,
  state: AdamState,
  hp: AdamParams,
): number {
  const h = { ...ADAM_DEFAULTS, ...hp };
  const norm = globalNorm(grads.values());
  if (gradientOverflows(norm)) return norm;
  const t = state.step + 1;
  const coef = h.grad_clip_norm > 0 ? Math.min(1, h.grad_clip_norm / (norm + 1e-6)) : 1;
  const decay = 1 - h.learning_rate * h.weight_decay;
  const stepSize = h.learning_rate / (1 - h.beta1 ** t);
  const sqrtBc2 = Math.sqrt(1 - h.beta2 ** t);
  const b1 = h.beta1, b2 = h.beta2, eps = h.eps;
  for (const [name, p] of params) {
    const g = grads.get(name)!, m = state.m.get(name)!, v = state.v.get(name)!;
    const x = p.data;
    for (let i = 0; i < x.length; i++) {
      const gi = g[i] * coef;
      const mi = b1 * m[i] + (1 - b1) * gi;
      const vi = b2 * v[i] + (1 - b2) * gi * gi;
      m[i] = mi;
      v[i] = vi;
      x[i] = x[i] * decay - stepSize * mi / (Math.sqrt(vi) / sqrtBc2 + eps);
    }
  }
  state.step = t;
  return norm;
}

/** Copies Adam's state as `exp_avg.<name>` / `exp_avg_sq.<name>` tensors (torch's names). */
export function adamStateToHost(state: AdamState, params: NamedTensors): OptimizerState {
  const tensors: NamedTensors = new Map();
  for (const [prefix, moments] of [["exp_avg", state.m], ["exp_avg_sq", state.v]] as const) {
    for (const [name, x] of moments) {
      tensors.set(`${prefix}.${name}`, hostTensor(params.get(name)!.shape, x.slice()));
    }
  }
  return { tensors, step: state.step };
}

/**
 * Rebuilds Adam's state for `params` (only names and shapes are read) from a checkpoint
 * written by {@link adamStateToHost}.
 *
 * @throws {Error} if a moment is missing, has the wrong shape, or the checkpoint has extra
 * tensors: such a checkpoint belongs to a different model or adapter.
 */
export function adamStateFromHost(params: NamedTensors, saved: OptimizerState): AdamState {
  const m = new Map<string, Float32Array>(), v = new Map<string, Float32Array>();
  for (const [name, p] of params) {
    for (const [prefix, into] of [["exp_avg", m], ["exp_avg_sq", v]] as const) {
      const t = saved.tensors.get(`${prefix}.${name}`);
      if (!t) throw new Error(`optimizer state: missing tensor ${prefix}.${name}`);
      if (t.shape.join() !== p.shape.join()) {
        throw new Error(
          `optimizer state: ${prefix}.${name} has shape [${t.shape}], expected [${p.shape}]`,
        );
      }
      into.set(name, Float32Array.from(t.data));
    }
  }
  if (saved.tensors.size !== m.size + v.size) {
    const extra = [...saved.tensors.keys()].filter((k) =>
      !/^exp_avg(_sq)?\./.test(k) || !params.has(k.replace(/^exp_avg(_sq)?\./, ""))
    );
    throw new Error(`optimizer state: unexpected tensors ${extra.join(", ")}`);
  }
  return { m, v, step: saved.step };
}
