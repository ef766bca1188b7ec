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
import { ropeAngles, rotate } from "./rope_graph.ts";

/** Options of {@link causalAttention}. */
export interface AttentionOptions {
  /** Sliding window: keys a query sees, itself included. Absent: full causal attention. */
  window?: number;
  /** `[B, T]` int64 input ids: only their shape is read (the sequence length `T`). */
  tokens: string;
  /** Queries per block of the windowed attention (must divide it); default {@link queryBlock}. */
  block?: number;
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
  const recompute = !!opts.recompute;
  const tokens = opts.tokens;
  if (!opts.window) return full(g, q, k, v, { t, tokens, scale, recompute });
  const block = opts.block ?? queryBlock(opts.window);
  return blocked(g, q, k, v, { t, tokens, hd, scale, window: opts.window, block, recompute });
}

/**
 * The sliding-window attention's forward alone, continuing after `past` (the `window`
 * positions before the first query): the sampler's prefill of a long prompt in chunks. A
 * position's output depends only on its block's tokens and the keys before it, never on where
 * the chunk starts, so a prompt run whole or continued from a cached prefix gives the same
 * numbers.
 */
export function slidingWindowAttention(
  g: GraphBuilder,
  q: string,
  k: string,
  v: string,
  opts: { window: number; block?: number; tokens: string; past: PastWindow },
): string {
  const t = dimOf(g, opts.tokens, 1), hd = dimOf(g, q, 3);
  const scale = g.op("Div", [g.scalar(1), g.op("Sqrt", [g.op("Cast", [hd], { to: { i: 1 } })])]);
  return blocked(g, q, k, v, {
    t,
    tokens: opts.tokens,
    hd,
    scale,
    window: opts.window,
    block: opts.block ?? queryBlock(opts.window),
    recompute: false,
    past: opts.past,
  }).y;
}

/**
 * Queries per block of the windowed attention: {@link QUERY_BLOCK} or the window if smaller.
 * Each block attends over `window + block` keys, so a smaller block wastes fewer masked
 * scores but runs more, smaller matmuls.
 */
export function queryBlock(window: number): number {
  return window % QUERY_BLOCK === 0 ? QUERY_BLOCK : window;
}

/** The query block measured fastest (see {@link queryBlock}). */
export const QUERY_BLOCK = 64;

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
  if (!angles) {
    const a = ropeAngles(g, cfg, positions);
    // The backward rotates by the negative angle (the rotation's transpose): sin negated.
    byPositions.set(positions, angles = { ...a, back: { cos: a.cos, sin: g.op("Neg", [a.sin]) } });
  }
  const a = angles;
  return { y: rotate(g, cfg, x, a), backward: (dy) => rotate(g, cfg, dy, a.back) };
}

/** Rotation angles: `cos`/`sin`, and `back`, the backward's (sin negated). */
type Angles = { cos: string; sin: string; back: { cos: string; sin: string } };

const ANGLES = new WeakMap<GraphBuilder, Map<string, Angles>>();

/** Full causal attention over all `T` keys. */
function full(
  g: GraphBuilder,
  q: string,
  k: string,
  v: string,
  s: { t: string; tokens: string; scale: string; recompute: boolean },
): AttentionGraph {
  const bias = once(g, `causal/${s.tokens}`, () => {
    const zero = g.constant([], BigInt64Array.of(0n)), one = g.constant([], BigInt64Array.of(1n));
    const t = g.op("Squeeze", [s.t, g.ints([0])]);
    const rows = g.op("Unsqueeze", [g.op("Range", [zero, t, one]), g.ints([1])]); // [T, 1]
    const cols = g.op("Range", [zero, t, one]); // [T]
    return g.op("Where", [g.op("Greater", [cols, rows]), g.scalar(MASKED), g.scalar(0)]);
  });
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

/** Keys and values before the sequence (the sampler's prefill continuing a cached prompt). */
export interface PastWindow {
  /** `[B, H, W, hd]` keys and values of the `window` positions before the first query. */
  keys: string;
  values: string;
  /** `[B, W]` 0 for a past position the row has, {@link MASKED} for one it has not. */
  bias: string;
}

/**
 * Sliding-window attention in blocks of `block` queries, each over the `window + block` keys
 * that can reach it (its own block and the `window` keys before it).
 */
function blocked(
  g: GraphBuilder,
  q: string,
  k: string,
  v: string,
  s: {
    t: string;
    tokens: string;
    hd: string;
    scale: string;
    window: number;
    block: number;
    recompute: boolean;
    past?: PastWindow;
  },
): AttentionGraph {
  const w = s.window, c = s.block;
  if (w % c !== 0) throw new Error(`attention: block ${c} must divide window ${w}`);
  const C = g.ints([c]);
  const pad = g.op("Mod", [g.op("Sub", [C, g.op("Mod", [s.t, C])]), C]); // [1]
  const padded = g.op("Add", [s.t, pad]); // Tp, [1]
  const blocks = g.op("Concat", [g.ints([0, 0, -1, c]), s.hd], { axis: { i: 0 } });
  const flat = g.op("Concat", [g.ints([0, 0, -1]), s.hd], { axis: { i: 0 } });
  /** Blocks `[B, H, nb, c, hd]` of a `[B, H, T, hd]` value. */
  const toBlocks = (x: string) => g.op("Reshape", [padTime(g, x, 0, pad), blocks]);
  /** `[B, H, T, hd]` of blocks `[B, H, nb, c, hd]`: the padding sliced off. */
  const fromBlocks = (x: string) => timeSlice(g, g.op("Reshape", [x, flat]), g.ints([0]), s.t);
  /** The keys' or values' `[B, H, W + Tp, hd]`: the window before the sequence, then it. */
  const front = (x: string, past?: string) =>
    past
      ? g.op("Concat", [past, padTime(g, x, 0, pad)], { axis: { i: 2 } })
      : padTime(g, x, w, pad);
  /** A window's `[B, H, nb, W + c, hd]` gradient back on its keys' `[B, H, T, hd]`. */
  const scatter = (x: string) => {
    const views = g.opN("Split", [x, g.ints(new Array(w / c + 1).fill(c))], w / c + 1, {
      axis: { i: 3 },
    });
    // View s of block b holds keys of block b + s of the front-padded axis.
    const placed = views.map((view, i) =>
      padTime(g, g.op("Reshape", [view, flat]), i * c, g.ints([w - i * c]))
    );
    const sum = placed.length === 1 ? placed[0] : g.op("Sum", placed);
    return timeSlice(g, sum, g.ints([w]), g.op("Add", [s.t, g.ints([w])]));
  };

  const qs = toBlocks(g.op("Mul", [q, s.scale]));
  const keys = windowOf(g, front(k, s.past?.keys), c, w, padded, blocks);
  const values = windowOf(g, front(v, s.past?.values), c, w, padded, blocks);
  const bias = once(
    g,
    `window/${w}/${c}/${s.tokens}/${s.past?.bias ?? ""}`,
    () => blockBias(g, w, c, padded, s.past?.bias),
  );
  const fwd = attend(g, qs, keys, values, bias, 5);
  return {
    y: fromBlocks(fwd.y),
    backward(dy) {
      if (s.past) throw new Error("attention: no backward over a past window");
      const p = s.recompute ? attend(g, qs, keys, values, bias, 5).p : fwd.p;
      const d = attendBackward(g, { qs, keys, values, p, y: fwd.y }, toBlocks(dy), s.scale, 5);
      return { dq: fromBlocks(d.dq), dk: scatter(d.dkeys), dv: scatter(d.dvalues) };
    },
  };
}

/** `x [B, ·, T, ·]` padded on axis 2 by `front` (static) and `back` (an int64 `[1]`). */
function padTime(g: GraphBuilder, x: string, front: number, back: string): string {
  const zeros = (n: number) => g.ints(new Array(n).fill(0));
  return g.op("Pad", [
    x,
    g.op("Concat", [zeros(2), g.ints([front, 0]), zeros(2), back, zeros(1)], {
      axis: { i: 0 },
    }),
  ]);
}

/** `x` on axis 2 from `from` to `to` (int64 `[1]` each). */
function timeSlice(g: GraphBuilder, x: string, from: string, to: string): string {
  return g.op("Slice", [x, from, to, g.ints([2])]);
}

/**
 * `[B, ·, nb, W + c, ·]` of a front-padded `[B, ·, W + Tp, ·]`: block `b`'s keys are the
 * `W/c + 1` blocks from `b` on, reshaped to `shape` (`[0, 0, −1, c, ·]`) and concatenated.
 */
function windowOf(
  g: GraphBuilder,
  x: string,
  c: number,
  w: number,
  padded: string,
  shape: string,
): string {
  const views = Array.from({ length: w / c + 1 }, (_, i) =>
    g.op("Reshape", [
      timeSlice(g, x, g.ints([i * c]), g.op("Add", [padded, g.ints([i * c])])),
      shape,
    ]));
  return g.op("Concat", views, { axis: { i: 3 } });
}

/**
 * The blocked attention's additive bias `[B, 1, nb, c, W + c]`: query `i` of a block sees
 * window key `j` iff `i < j ≤ i + W` (key `j` sits `W − j` before the block's start), plus each
 * key's own bias: {@link MASKED} before the sequence (or the past's `bias [B, W]`), 0 inside
 * it.
 */
function blockBias(
  g: GraphBuilder,
  w: number,
  c: number,
  padded: string,
  past?: string,
): string {
  const span = w + c;
  const band = new Float32Array(c * span);
  for (let i = 0; i < c; i++) {
    for (let j = 0; j < span; j++) band[i * span + j] = i < j && j <= i + w ? 0 : MASKED;
  }
  const before = past
    ? g.op("Reshape", [past, g.ints([0, 1, w, 1])])
    : g.constant([1, 1, w, 1], new Float32Array(w).fill(MASKED));
  const keyBias = g.op("Pad", [
    before,
    g.op("Concat", [g.ints([0, 0, 0, 0, 0, 0]), padded, g.ints([0])], { axis: { i: 0 } }),
  ]); // [B, 1, W + Tp, 1]
  const windows = windowOf(g, keyBias, c, w, padded, g.ints([0, 0, -1, c, 1]));
  return g.op("Add", [
    g.op("Reshape", [windows, g.ints([0, 0, -1, 1, span])]),
    g.constant([c, span], band),
  ]);
}

/**
 * `make()`'s value, built once per graph and `key` (the masks every layer shares). Only what
 * depends on the key's names alone may be built this way.
 */
function once(g: GraphBuilder, key: string, make: () => string): string {
  let byKey = ONCE.get(g);
  if (!byKey) ONCE.set(g, byKey = new Map());
  let value = byKey.get(key);
  if (value === undefined) byKey.set(key, value = make());
  return value;
}

const ONCE = new WeakMap<GraphBuilder, Map<string, string>>();

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
