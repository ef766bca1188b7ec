/**
 * Rotary positions and the sliding attention window in the sampler's ONNX graph
 * (`gpt_graph.ts`), the graph side of `../model/rope.ts`.
 *
 * Angles: `cos(p·f)` for any position is made from two small tables computed on the host in
 * double precision, `p = 256·hi + lo`: `cos(p·f) = cos(256·hi·f)·cos(lo·f) − sin(256·hi·f)·
 * sin(lo·f)` (and `sin` alike), so the graph never takes the cosine of a large float32 angle
 * and agrees with the learner's table to ~1e-7.
 *
 * Window: a windowed model's cache is a ring (`../sampler/host_cache.ts`), so past slots are in
 * no particular order; the graph gets each past slot's position (`key_positions [B, S]`) and
 * masks a key when `query position − key position ≥ window`.
 *
 * @module
 */

import { headWidth, type ModelConfig } from "../model/config.ts";
import { ropeTable } from "../model/rope.ts";
import { MASKED } from "./mask.ts";
import type { GraphBuilder } from "./graph.ts";

/** Positions per row of the low table (the split `p = 256·hi + lo`). */
const LOW = 256;

/** `cos`/`sin` `[B, 1, T, hd/2]` of `positions [B, T]` (int64), to rotate heads `[B, H, T, hd]`. */
export function ropeAngles(
  g: GraphBuilder,
  cfg: ModelConfig,
  positions: string,
): { cos: string; sin: string } {
  const hd = headWidth(cfg), half = hd / 2;
  const low = ropeTable(0, LOW, hd, cfg.ropeTheta);
  const highCount = Math.ceil(cfg.maxSeqLen / LOW);
  const high = { cos: new Float32Array(highCount * half), sin: new Float32Array(highCount * half) };
  for (let h = 0; h < highCount; h++) {
    const row = ropeTable(h * LOW, 1, hd, cfg.ropeTheta);
    high.cos.set(row.cos, h * half);
    high.sin.set(row.sin, h * half);
  }
  const lowIdx = g.op("Mod", [positions, g.constant([], BigInt64Array.of(BigInt(LOW)))]);
  const highIdx = g.op("Div", [positions, g.constant([], BigInt64Array.of(BigInt(LOW)))]);
  const take = (table: Float32Array, rows: number, idx: string) =>
    g.op("Gather", [g.constant([rows, half], table), idx], { axis: { i: 0 } }); // [B, T, half]
  const cl = take(low.cos, LOW, lowIdx), sl = take(low.sin, LOW, lowIdx);
  const ch = take(high.cos, highCount, highIdx), sh = take(high.sin, highCount, highIdx);
  const cos = g.op("Sub", [g.op("Mul", [ch, cl]), g.op("Mul", [sh, sl])]);
  const sin = g.op("Add", [g.op("Mul", [sh, cl]), g.op("Mul", [ch, sl])]);
  const heads = (x: string) => g.op("Unsqueeze", [x, g.ints([1])]);
  return { cos: heads(cos), sin: heads(sin) };
}

/** Rotates `x [B, H, T, hd]` by {@link ropeAngles}: `[x1·cos − x2·sin, x2·cos + x1·sin]`. */
export function rotate(
  g: GraphBuilder,
  cfg: ModelConfig,
  x: string,
  angles: { cos: string; sin: string },
): string {
  const half = headWidth(cfg) / 2;
  const [x1, x2] = g.opN("Split", [x, g.ints([half, half])], 2, { axis: { i: 3 } });
  return g.op("Concat", [
    g.op("Sub", [g.op("Mul", [x1, angles.cos]), g.op("Mul", [x2, angles.sin])]),
    g.op("Add", [g.op("Mul", [x2, angles.cos]), g.op("Mul", [x1, angles.sin])]),
  ], { axis: { i: 3 } });
}

/**
 * The window's additive bias `[B, 1, T, S + T]`: {@link MASKED} where the query's position
 * minus the key's is at least `window` (past keys at `keyPositions [B, S]`, new keys at
 * `positions [B, T]`).
 */
export function windowBias(
  g: GraphBuilder,
  window: number,
  keyPositions: string,
  positions: string,
): string {
  const keys = g.op("Unsqueeze", [
    g.op("Concat", [keyPositions, positions], { axis: { i: 1 } }),
    g.ints([1]),
  ]); // [B, 1, S + T]
  const queries = g.op("Unsqueeze", [positions, g.ints([2])]); // [B, T, 1]
  const far = g.op("Greater", [
    g.op("Sub", [queries, keys]),
    g.constant([], BigInt64Array.of(BigInt(window - 1))),
  ]);
  return g.op("Unsqueeze", [g.op("Where", [far, g.scalar(MASKED), g.scalar(0)]), g.ints([1])]);
}
