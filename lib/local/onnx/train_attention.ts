/**
 * Attention and rotary positions for the learner's ONNX training graph, each a forward
 * subgraph with its backward written out (the graph is built from TypeScript, so there is no
 * autodiff): the learner builds one forward + loss + backward graph from these pieces.
 *
 * Attention takes heads-split `q`, `k`, `v [B, H, T, hd]` (q and k already rotated) and applies
 * the scale `1/√hd` and causality inside. Without a window it is full causal attention (`T²`).
 * With a window `W` (key `j` visible to query `i` iff `0 ≤ i − j < W`) it is blocked, so time
 * and memory grow linearly with `T`:
 * - `T` is padded up to a multiple of `W` (the padding is sliced off again);
 * - queries are cut into blocks `[B, H, nb, W, hd]`;
 * - each block attends over `2W` keys: the previous block's and its own (`[B, H, nb, 2W, hd]`),
 *   under one static `[W, 2W]` mask, plus the previous half of block 0 masked;
 * - the backward scatters the keys' and values' gradients back from the two halves: the
 *   "previous block" half of block `c` belongs to block `c − 1`.
 *
 * Padding needs no mask: pad tokens come after the real ones, so no real query sees them, and
 * their loss weight is 0 (so their `dy` is 0).
 *
 * The backward (`P` the attention weights, `S` the scaled scores):
 * `dP = dy·Vᵀ`, `dS = P ⊙ (dP − rowsum(dP ⊙ P))` with `rowsum(dP ⊙ P) = rowsum(dy ⊙ y)`,
 * `dQ = dS·K/√hd`, `dK = dSᵀ·Q/√hd`, `dV = Pᵀ·dy`.
 *
 * @module
 */

import type { ModelConfig } from "../model/config.ts";
import type { GraphBuilder } from "./graph.ts";
import { MASKED } from "./mask.ts";
import { ropeAngles, rotate, rotateInverse } from "./rope_graph.ts";

/** Options of {@link causalAttention}. */
export interface AttentionOptions {
  /** Sliding window: keys a query sees, itself included. Absent: full causal attention. */
  window?: number;
  /** `[B, T]` int64 input ids: only their shape is read (the sequence length `T`). */
  tokens: string;
  /**
   * Recompute the attention weights in the backward instead of keeping them from the forward.
   * Kept (default), they take `B·H·T·2W` floats per layer until that layer's backward.
   */
  recompute?: boolean;
}

/** An attention subgraph: its output and a function adding its backward to the graph. */
export interface AttentionGraph {
  /** `[B, H, T, hd]` attention output, heads not yet merged. */
  y: string;
  /** The gradients of `q`, `k`, `v` (each `[B, H, T, hd]`) given the output's `dy`. */
  backward(dy: string): { dq: string; dk: string; dv: string };
}

/** A rotary subgraph: the rotated value and a function adding its backward to the graph. */
export interface RopeGraph {
  /** `[B, H, T, hd]` rotated by the positions' angles. */
  y: string;
  /** The gradient of the input given the output's `dy` (rotated back by the same angles). */
  backward(dy: string): string;
}

/**
 * Causal self-attention of `q`, `k`, `v [B, H, T, hd]` (see the module doc), full or blocked
 * sliding-window, with its backward.
 *
 * @example
 * const att = causalAttention(g, q, k, v, { window: 256, tokens: "input_ids" });
 * // … loss and its backward down to d(att.y) …
 * const { dq, dk, dv } = att.backward(dy);
 */
export function causalAttention(
  g: GraphBuilder,
  q: string,
  k: string,
  v: string,
  opts: AttentionOptions,
): AttentionGraph {
  const t = dimOf(g, opts.tokens, 1);
  const hd = dimOf(g, q, 3);
  const scale = g.op("Div", [
    g.scalar(1),
    g.op("Sqrt", [g.op("Cast", [hd], { to: { i: 1 } })]),
  ]);
  return opts.window
    ? blocked(g, q, k, v, { t, hd, scale, window: opts.window, recompute: !!opts.recompute })
    : full(g, q, k, v, { t, scale, recompute: !!opts.recompute });
}

/**
 * Rotates `x [B, H, T, hd]` by the angles of `positions [B, T]` (int64), as the sampler's
 * graph does (`rope_graph.ts`); the backward rotates `dy` by the negative angles. The angle
 * tables of one `positions` are built once per graph, whatever the number of calls.
 */
export function ropeForward(
  g: GraphBuilder,
  cfg: ModelConfig,
  x: string,
  positions: string,
): RopeGraph {
  let byPositions = ANGLES.get(g);
  if (!byPositions) ANGLES.set(g, byPositions = new Map());
  let angles = byPositions.get(positions);
  if (!angles) byPositions.set(positions, angles = ropeAngles(g, cfg, positions));
  const a = angles;
  return { y: rotate(g, cfg, x, a), backward: (dy) => rotateInverse(g, cfg, dy, a) };
}

const ANGLES = new WeakMap<GraphBuilder, Map<string, { cos: string; sin: string }>>();

/** Full causal attention over all `T` keys. */
function full(
  g: GraphBuilder,
  q: string,
  k: string,
  v: string,
  s: { t: string; scale: string; recompute: boolean },
): AttentionGraph {
  const zero = g.constant([], BigInt64Array.of(0n)), one = g.constant([], BigInt64Array.of(1n));
  const t = g.op("Squeeze", [s.t, g.ints([0])]);
  const rows = g.op("Unsqueeze", [g.op("Range", [zero, t, one]), g.ints([1])]); // [T, 1]
  const cols = g.op("Range", [zero, t, one]); // [T]
  const bias = g.op("Where", [g.op("Greater", [cols, rows]), g.scalar(MASKED), g.scalar(0)]);
  const qs = g.op("Mul", [q, s.scale]);
  const fwd = attend(g, qs, k, v, bias, 4);
  return {
    y: fwd.y,
    backward(dy) {
      const p = s.recompute ? attend(g, qs, k, v, bias, 4).p : fwd.p;
      const d = attendBackward(g, { qs, keys: k, values: v, p, y: fwd.y }, dy, s.scale, 4);
      return { dq: d.dq, dk: d.dkeys, dv: d.dvalues };
    },
  };
}

/** Sliding-window attention in blocks of `window` queries over `2·window` keys. */
function blocked(
  g: GraphBuilder,
  q: string,
  k: string,
  v: string,
  s: { t: string; hd: string; scale: string; window: number; recompute: boolean },
): AttentionGraph {
  const w = s.window;
  const W = g.ints([w]);
  const pad = g.op("Mod", [g.op("Sub", [W, g.op("Mod", [s.t, W])]), W]); // [1]
  const padded = g.op("Add", [s.t, pad]); // Tp, [1]
  const blocks = g.op("Concat", [g.ints([0, 0, -1, w]), s.hd], { axis: { i: 0 } });
  const flat = g.op("Concat", [g.ints([0, 0, -1]), s.hd], { axis: { i: 0 } });
  const zeros = (n: number) => g.ints(new Array(n).fill(0));
  /** `x [B, H, T, hd]` padded on the time axis by `front` (static) and `back` (`[1]`). */
  const padTime = (x: string, front: number, back: string) =>
    g.op("Pad", [
      x,
      g.op("Concat", [zeros(2), g.ints([front, 0]), zeros(2), back, zeros(1)], {
        axis: { i: 0 },
      }),
    ]);
  const time = (x: string, from: string, to: string) => g.op("Slice", [x, from, to, g.ints([2])]);
  /** `[B, H, nb, 2W, hd]`: each block's previous block's keys, then its own. */
  const windowOf = (x: string) => {
    const front = padTime(x, w, pad); // [B, H, W + Tp, hd]
    const prev = g.op("Reshape", [time(front, g.ints([0]), padded), blocks]);
    const own = g.op("Reshape", [time(front, W, g.op("Add", [padded, W])), blocks]);
    return g.op("Concat", [prev, own], { axis: { i: 3 } });
  };
  /** Blocks `[B, H, nb, W, hd]` of a `[B, H, T, hd]` value. */
  const toBlocks = (x: string) => g.op("Reshape", [padTime(x, 0, pad), blocks]);
  /** `[B, H, T, hd]` of blocks `[B, H, nb, W, hd]`: the padding sliced off. */
  const fromBlocks = (x: string) => time(g.op("Reshape", [x, flat]), g.ints([0]), s.t);
  /** A window's `[B, H, nb, 2W, hd]` gradient back on its keys' `[B, H, T, hd]`. */
  const scatter = (x: string) => {
    const [prev, own] = g.opN("Split", [x, g.ints([w, w])], 2, { axis: { i: 3 } });
    // Block c's previous half holds block c − 1's keys: shift it one block earlier.
    const shifted = padTime(time(g.op("Reshape", [prev, flat]), W, padded), 0, W);
    return time(g.op("Add", [g.op("Reshape", [own, flat]), shifted]), g.ints([0]), s.t);
  };

  const qs = toBlocks(g.op("Mul", [q, s.scale]));
  const keys = windowOf(k), values = windowOf(v);
  const bias = windowBias(g, w, padded);
  const fwd = attend(g, qs, keys, values, bias, 5);
  return {
    y: fromBlocks(fwd.y),
    backward(dy) {
      const p = s.recompute ? attend(g, qs, keys, values, bias, 5).p : fwd.p;
      const d = attendBackward(g, { qs, keys, values, p, y: fwd.y }, toBlocks(dy), s.scale, 5);
      return { dq: fromBlocks(d.dq), dk: scatter(d.dkeys), dv: scatter(d.dvalues) };
    },
  };
}

/**
 * The blocked attention's additive bias `[nb, W, 2W]`: query `i` of a block sees window key
 * `j` iff `i < j ≤ i + W` (key `j` sits at `j − W` from the block's start), and block 0 has no
 * previous block.
 */
function windowBias(g: GraphBuilder, w: number, padded: string): string {
  const band = new Float32Array(w * 2 * w);
  for (let i = 0; i < w; i++) {
    for (let j = 0; j < 2 * w; j++) band[i * 2 * w + j] = i < j && j <= i + w ? 0 : MASKED;
  }
  const prevHalf = new Float32Array(2 * w);
  prevHalf.fill(MASKED, 0, w);
  const zero = g.constant([], BigInt64Array.of(0n)), one = g.constant([], BigInt64Array.of(1n));
  const nb = g.op("Squeeze", [g.op("Div", [padded, g.ints([w])]), g.ints([0])]);
  const first = g.op("Unsqueeze", [
    g.op("Equal", [g.op("Range", [zero, nb, one]), zero]),
    g.ints([1, 2]),
  ]); // [nb, 1, 1]
  const noPrevious = g.op("Where", [first, g.constant([1, 1, 2 * w], prevHalf), g.scalar(0)]);
  return g.op("Add", [noPrevious, g.constant([w, 2 * w], band)]);
}

/** `P = softmax(qs·kᵀ + bias)` and `y = P·v` over the last two axes (`qs` already scaled). */
function attend(
  g: GraphBuilder,
  qs: string,
  keys: string,
  values: string,
  bias: string,
  rank: number,
): { p: string; y: string } {
  const scores = g.op("Add", [g.op("MatMul", [qs, transposeLast(g, keys, rank)]), bias]);
  const p = g.op("Softmax", [scores], { axis: { i: -1 } });
  return { p, y: g.op("MatMul", [p, values]) };
}

/** The backward of {@link attend} (see the module doc), in its shapes. */
function attendBackward(
  g: GraphBuilder,
  f: { qs: string; keys: string; values: string; p: string; y: string },
  dy: string,
  scale: string,
  rank: number,
): { dq: string; dkeys: string; dvalues: string } {
  const dp = g.op("MatMul", [dy, transposeLast(g, f.values, rank)]);
  const rowDot = g.op("ReduceSum", [g.op("Mul", [dy, f.y]), g.ints([-1])], {
    keepdims: { i: 1 },
  });
  const ds = g.op("Mul", [f.p, g.op("Sub", [dp, rowDot])]);
  return {
    dq: g.op("Mul", [g.op("MatMul", [ds, f.keys]), scale]),
    dkeys: g.op("MatMul", [transposeLast(g, ds, rank), f.qs]),
    dvalues: g.op("MatMul", [transposeLast(g, f.p, rank), dy]),
  };
}

/** `x` of rank `rank` with its last two axes swapped (ORT fuses it into the MatMul reading it). */
function transposeLast(g: GraphBuilder, x: string, rank: number): string {
  const perm = Array.from({ length: rank }, (_, i) => i);
  [perm[rank - 2], perm[rank - 1]] = [rank - 1, rank - 2];
  return g.op("Transpose", [x], { perm: { ints: perm } });
}

/** `[1]` int64: the size of axis `axis` of `x`. */
function dimOf(g: GraphBuilder, x: string, axis: number): string {
  return g.op("Shape", [x], { start: { i: axis }, end: { i: axis + 1 } });
}
