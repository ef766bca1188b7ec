/**
 * Decoupled AdamW over a parameter tree, with torch.optim.AdamW's exact update order, and
 * optional global-norm gradient clipping (torch's `clip_grad_norm_`) applied first:
 *
 * ```
 * g ← g · min(1, clip / (‖g‖₂ + 1e-6))        (only when clip > 0; ‖g‖ over all tensors)
 * p ← p · (1 − lr·wd)
 * m ← β1·m + (1 − β1)·g;   v ← β2·v + (1 − β2)·g²
 * p ← p − (lr / (1 − β1ᵗ)) · m / (√v / √(1 − β2ᵗ) + eps)
 * ```
 *
 * The whole update is one jitted function over the tree. Every hyper-parameter, including
 * the step-dependent bias corrections, enters as a traced scalar, so changing the learning
 * rate or taking the next step reuses the compiled program.
 *
 * @module
 */

import { jit, numpy as np, tree } from "@jax-js/jax";
import { type ParamTree, toDevice, toHost } from "../engine.ts";
import { hostTensor, type NamedTensors } from "../tensors.ts";
import { ADAM_DEFAULTS, type AdamParams, type OptimizerState } from "./types.ts";

/** Adam's moments on the device and the number of steps taken. */
export interface AdamState {
  /** First moments, same keys and shapes as the parameters. */
  m: ParamTree;
  /** Second moments. */
  v: ParamTree;
  /** Steps taken so far (t − 1 for the next step). */
  step: number;
}

/** Scalars of one update, computed on the host in float64. */
type UpdateScalars = {
  beta1: number;
  beta2: number;
  eps: number;
  /** `1 − lr·wd`. */
  decay: number;
  /** `lr / (1 − β1ᵗ)`. */
  stepSize: number;
  /** `√(1 − β2ᵗ)`. */
  sqrtBc2: number;
  /** Clipping threshold; 0 = off. */
  clip: number;
};

/** Result of {@link adamStep}. */
export interface AdamStepResult {
  params: ParamTree;
  state: AdamState;
  /** Global L2 norm of the gradients before clipping (a scalar on the device). */
  gradNorm: np.Array;
}

/** Zero moments for `params` (borrowed), step 0. */
export function initAdamState(params: ParamTree): AdamState {
  const zeros = () =>
    Object.fromEntries(Object.entries(params).map(([k, p]) => [k, np.zeros(p.shape)]));
  return { m: zeros(), v: zeros(), step: 0 };
}

/**
 * One AdamW step. Consumes `params`, `grads` and `state`'s moments; returns the new ones.
 * `hp` fields that are absent take Tinker's defaults.
 */
export function adamStep(
  params: ParamTree,
  grads: ParamTree,
  state: AdamState,
  hp: AdamParams,
): AdamStepResult {
  const h = { ...ADAM_DEFAULTS, ...hp };
  const t = state.step + 1;
  const scalars: UpdateScalars = {
    beta1: h.beta1,
    beta2: h.beta2,
    eps: h.eps,
    decay: 1 - h.learning_rate * h.weight_decay,
    stepSize: h.learning_rate / (1 - h.beta1 ** t),
    sqrtBc2: Math.sqrt(1 - h.beta2 ** t),
    clip: h.grad_clip_norm,
  };
  const out = adamUpdate(params, grads, state.m, state.v, scalars);
  return { params: out.params, state: { m: out.m, v: out.v, step: t }, gradNorm: out.gradNorm };
}

/** Global L2 norm of a gradient tree, as a traced scalar. Borrows `grads`. */
function globalNorm(grads: ParamTree): np.Array {
  const squares = Object.values(grads).map((g) => np.square(g.ref).sum());
  return np.sqrt(squares.reduce((a, b) => a.add(b)));
}

/** The jitted update; scalars are traced (not static), so there is one compile per tree. */
const adamUpdate = jit(function adamUpdate(
  params: ParamTree,
  grads: ParamTree,
  m: ParamTree,
  v: ParamTree,
  s: UpdateScalars,
) {
  const { clip, ...sc } = s as unknown as Record<keyof UpdateScalars, np.Array>;
  const norm = globalNorm(grads);
  const coef = np.where(
    np.greater(clip.ref, 0),
    np.minimum(1, clip.div(norm.ref.add(1e-6))),
    1,
  );
  const out = { params: {} as ParamTree, m: {} as ParamTree, v: {} as ParamTree };
  for (const k of Object.keys(params)) {
    const g = grads[k].mul(coef.ref);
    const mk = m[k].mul(sc.beta1.ref).add(g.ref.mul(np.subtract(1, sc.beta1.ref)));
    const vk = v[k].mul(sc.beta2.ref).add(np.square(g).mul(np.subtract(1, sc.beta2.ref)));
    const denom = np.sqrt(vk.ref).div(sc.sqrtBc2.ref).add(sc.eps.ref);
    const update = mk.ref.div(denom).mul(sc.stepSize.ref);
    out.params[k] = params[k].mul(sc.decay.ref).sub(update);
    out.m[k] = mk;
    out.v[k] = vk;
  }
  coef.dispose();
  tree.dispose(sc);
  return { ...out, gradNorm: norm };
});

/** Copies Adam's state to the host as `exp_avg.<name>` / `exp_avg_sq.<name>` tensors. */
export async function adamStateToHost(state: AdamState): Promise<OptimizerState> {
  const [m, v] = await Promise.all([toHost(state.m), toHost(state.v)]);
  const tensors: NamedTensors = new Map();
  for (const [name, t] of m) tensors.set(`exp_avg.${name}`, t);
  for (const [name, t] of v) tensors.set(`exp_avg_sq.${name}`, t);
  return { tensors, step: state.step };
}

/**
 * Rebuilds Adam's state for `params` (borrowed; only names and shapes are read) from a
 * checkpoint written by {@link adamStateToHost}.
 *
 * @throws {Error} if a moment is missing, has the wrong shape, or the checkpoint has extra
 * tensors: such a checkpoint belongs to a different model or adapter.
 */
export function adamStateFromHost(params: ParamTree, saved: OptimizerState): AdamState {
  const m: NamedTensors = new Map(), v: NamedTensors = new Map();
  for (const [name, p] of Object.entries(params)) {
    for (const [prefix, into] of [["exp_avg", m], ["exp_avg_sq", v]] as const) {
      const t = saved.tensors.get(`${prefix}.${name}`);
      if (!t) throw new Error(`optimizer state: missing tensor ${prefix}.${name}`);
      if (t.shape.join() !== p.shape.join()) {
        throw new Error(
          `optimizer state: ${prefix}.${name} has shape [${t.shape}], expected [${p.shape}]`,
        );
      }
      into.set(name, hostTensor(t.shape, t.data));
    }
  }
  if (saved.tensors.size !== m.size + v.size) {
    const extra = [...saved.tensors.keys()].filter((k) =>
      !/^exp_avg(_sq)?\./.test(k) ||
      !(k.replace(/^exp_avg(_sq)?\./, "") in params)
    );
    throw new Error(`optimizer state: unexpected tensors ${extra.join(", ")}`);
  }
  return { m: toDevice(m), v: toDevice(v), step: saved.step };
}
