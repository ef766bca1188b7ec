/**
 * The learner's private attention and rotary subgraphs, written to the contract of
 * `train_attention.ts` (longattn's file: full causal and sliding-window blocked attention, rope
 * forward and backward) until that file lands; then `train_graph.ts` imports it instead and this
 * file goes. Here attention is quadratic in `T`: a window is a mask over the full score matrix.
 *
 * @module
 */

import type { ModelConfig } from "../model/config.ts";
import type { GraphBuilder } from "./graph.ts";
import { MASKED } from "./mask.ts";
import { ropeAngles } from "./rope_graph.ts";

/** Options of {@link causalAttention}. */
export interface AttentionOptions {
  /** Key j is visible to query i iff `0 <= i - j < window`; absent: full causal. */
  window?: number;
  /** The `[B, T]` int64 input ids, for shapes. */
  tokens: string;
}

/** An attention forward and its backward. */
export interface AttentionParts {
  y: string;
  backward(dy: string): { dq: string; dk: string; dv: string };
}

/**
 * Causal attention of `q`, `k`, `v [B, H, T, hd]` (q and k already rotated), scaled by
 * `1/√hd`. The forward scales the scores, as the sampler does (scaling `q` instead moved a
 * rotary LoRA case's gradient by 1e-4 against the jax-js learner); the backward scales `dq`
 * and `dk` (T/hd times smaller than `dS`).
 * Backward: `dv = Pᵀ·dy`, `dS = P ⊙ (dy·vᵀ − rowsum(dy ⊙ y))`, `dq = dS·k/√hd`, `dk = dSᵀ·q/√hd`.
 */
export function causalAttention(
  g: GraphBuilder,
  q: string,
  k: string,
  v: string,
  opts: AttentionOptions,
): AttentionParts {
  const scale = inverseSqrtWidth(g, q);
  const scores = g.op("MatMul", [q, g.op("Transpose", [k], { perm: { ints: [0, 1, 3, 2] } })]);
  const biased = g.op("Add", [g.op("Mul", [scores, scale]), causalBias(g, opts)]);
  const p = g.op("Softmax", [biased], { axis: { i: -1 } });
  const y = g.op("MatMul", [p, v]);
  return {
    y,
    backward(dy: string) {
      const pT = g.op("Transpose", [p], { perm: { ints: [0, 1, 3, 2] } });
      const dv = g.op("MatMul", [pT, dy]);
      const dp = g.op("MatMul", [dy, g.op("Transpose", [v], { perm: { ints: [0, 1, 3, 2] } })]);
      const rows = g.op("ReduceSum", [g.op("Mul", [dy, y]), g.ints([-1])], { keepdims: { i: 1 } });
      const ds = g.op("Mul", [p, g.op("Sub", [dp, rows])]);
      const dq = g.op("Mul", [g.op("MatMul", [ds, k]), scale]);
      const dsT = g.op("Transpose", [ds], { perm: { ints: [0, 1, 3, 2] } });
      const dk = g.op("Mul", [g.op("MatMul", [dsT, q]), scale]);
      return { dq, dk, dv };
    },
  };
}

/** `1/√hd` as a float scalar, read off the shape of `q [B, H, T, hd]`. */
function inverseSqrtWidth(g: GraphBuilder, q: string): string {
  const hd = g.op("Gather", [g.op("Shape", [q]), g.constant([], BigInt64Array.of(3n))], {
    axis: { i: 0 },
  });
  return g.op("Reciprocal", [g.op("Sqrt", [g.op("Cast", [hd], { to: { i: 1 } })])]);
}

/** `[T, T]` additive bias: {@link MASKED} where key j is not visible to query i. */
function causalBias(g: GraphBuilder, opts: AttentionOptions): string {
  const t = g.op("Gather", [g.op("Shape", [opts.tokens]), g.constant([], BigInt64Array.of(1n))], {
    axis: { i: 0 },
  });
  const zero = g.constant([], BigInt64Array.of(0n)), one = g.constant([], BigInt64Array.of(1n));
  const range = g.op("Range", [zero, t, one]);
  const i = g.op("Unsqueeze", [range, g.ints([1])]); // [T, 1]
  const diff = g.op("Sub", [i, range]); // i - j, [T, T]
  let hidden = g.op("Less", [diff, zero]);
  if (opts.window) {
    const far = g.op("Greater", [diff, g.constant([], BigInt64Array.of(BigInt(opts.window - 1)))]);
    hidden = g.op("Or", [hidden, far]);
  }
  return g.op("Where", [hidden, g.scalar(MASKED), g.scalar(0)]);
}

/**
 * Rotates `x [B, H, T, hd]` by the rotary angles of `positions [B, T]` (or `[1, T]`), as the
 * sampler does (`rope_graph.ts`); the backward rotates by the negative angle.
 */
export function ropeForward(
  g: GraphBuilder,
  cfg: ModelConfig,
  x: string,
  positions: string,
): { y: string; backward(dy: string): string } {
  const angles = ropeAngles(g, cfg, positions);
  const half = cfg.dModel / cfg.nHeads / 2;
  const turn = (z: string, sign: 1 | -1) => {
    const [z1, z2] = g.opN("Split", [z, g.ints([half, half])], 2, { axis: { i: 3 } });
    const sin = sign === 1 ? angles.sin : g.op("Neg", [angles.sin]);
    return g.op("Concat", [
      g.op("Sub", [g.op("Mul", [z1, angles.cos]), g.op("Mul", [z2, sin])]),
      g.op("Add", [g.op("Mul", [z2, angles.cos]), g.op("Mul", [z1, sin])]),
    ], { axis: { i: 3 } });
  };
  return { y: turn(x, 1), backward: (dy) => turn(dy, -1) };
}
