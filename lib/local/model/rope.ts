/**
 * Rotary position embeddings (RoPE) and sliding-window causal attention of the local GPT, the
 * two options that let a model take prompts far longer than it was trained on at a cost linear
 * in their length (`positions: "rope"`, `attentionWindow` in `config.ts`).
 *
 * RoPE rotates each head's query and key by angles `p · θ^(-2i/hd)` (rotate-half layout: the
 * first half of a head pairs with its second half, as GPT-NeoX), so a score depends on the
 * distance between two tokens only. The angles are computed on the host in double precision
 * and reduced mod 2π, so the learner (here) and the sampler's ONNX graph (`../onnx/rope_graph.ts`)
 * read the same float32 cosines whatever their `cos` kernels do with large arguments.
 *
 * @module
 */

import { nn, numpy as np } from "@jax-js/jax";

/** The rotary frequency of pair `i` of a head of width `hd`. */
export function ropeFrequency(i: number, headWidth: number, theta: number): number {
  return Math.pow(theta, (-2 * i) / headWidth);
}

/**
 * `cos` and `sin` of `p · f_i` for positions `p = start .. start + count - 1` and every pair
 * `i < hd/2`, row-major `[count, hd/2]`, computed in double precision.
 */
export function ropeTable(
  start: number,
  count: number,
  headWidth: number,
  theta: number,
): { cos: Float32Array<ArrayBuffer>; sin: Float32Array<ArrayBuffer> } {
  const half = headWidth / 2;
  const cos = new Float32Array(count * half), sin = new Float32Array(count * half);
  for (let p = 0; p < count; p++) {
    for (let i = 0; i < half; i++) {
      const angle = ((start + p) * ropeFrequency(i, headWidth, theta)) % (2 * Math.PI);
      cos[p * half + i] = Math.cos(angle);
      sin[p * half + i] = Math.sin(angle);
    }
  }
  return { cos, sin };
}

/**
 * Rotates `x [B, T, H, hd]` (consumed) at positions `0 .. T-1`:
 * `[x1·cos − x2·sin, x2·cos + x1·sin]` with `x1`, `x2` the two halves of each head.
 */
export function applyRope(x: np.Array, theta: number): np.Array {
  const [, t, , hd] = x.shape;
  const half = hd / 2;
  const table = ropeTable(0, t, hd, theta);
  const cos = np.array(table.cos, { shape: [1, t, 1, half] });
  const sin = np.array(table.sin, { shape: [1, t, 1, half] });
  const x1 = x.ref.slice([], [], [], [0, half]);
  const x2 = x.slice([], [], [], [half, hd]);
  return np.concatenate([
    x1.ref.mul(cos.ref).sub(x2.ref.mul(sin.ref)),
    x2.mul(cos).add(x1.mul(sin)),
  ], -1);
}

/**
 * Causal attention of `q`, `k`, `v [B, T, H, hd]` (consumed) where a query sees itself and the
 * `window - 1` keys before it, computed per chunk of `chunk` queries against the `window +
 * chunk` keys that can reach them: time and memory grow with `T · (window + chunk)`, not `T²`.
 * `chunk` must divide `window`. Returns `[B, T, H, hd]`.
 */
export function windowedAttention(
  q: np.Array,
  k: np.Array,
  v: np.Array,
  window: number,
  chunk = Math.min(window, 64),
): np.Array {
  if (window % chunk !== 0) throw new Error(`gpt: chunk ${chunk} must divide window ${window}`);
  const [b, t, h, hd] = q.shape;
  const m = window / chunk, n = Math.ceil(t / chunk), tp = n * chunk, span = window + chunk;
  // Chunk c's keys are chunks c-m .. c: m+1 shifted views of the keys padded by m chunks.
  const chunkKeys = (x: np.Array): np.Array => {
    const padded = np.pad(x, [[0, 0], [window, tp - t], [0, 0], [0, 0]]);
    const views = Array.from(
      { length: m + 1 },
      (_, s) =>
        (s === m ? padded : padded.ref).slice([], [s * chunk, (s + n) * chunk]).reshape([
          b,
          n,
          chunk,
          h,
          hd,
        ]),
    );
    return np.concatenate(views, 2); // [B, n, span, H, hd]
  };
  // Heads before positions, so both products are batched matmuls over [B, n, H].
  const perHead = (x: np.Array) => np.transpose(x, [0, 1, 3, 2, 4]); // [B, n, H, ·, hd]
  const qc = perHead(
    np.pad(q, [[0, 0], [0, tp - t], [0, 0], [0, 0]]).reshape([b, n, chunk, h, hd]),
  );
  const kT = np.transpose(chunkKeys(k), [0, 1, 3, 4, 2]); // [B, n, H, hd, span]
  const scores = np.matmul(qc, kT).mul(1 / Math.sqrt(hd)); // [B, n, H, chunk, span]
  // Query i of chunk c is at c·chunk + i; key j at (c - m)·chunk + j. Visible: 0 ≤ i + window
  // − j < window (the window, causal), and the key's position ≥ 0 (not the front padding).
  const i = np.arange(chunk).reshape([chunk, 1]), j = np.arange(span).reshape([1, span]);
  const band = np.logicalAnd(np.greater(j.ref, i.ref), np.lessEqual(j, i.add(window)));
  const c = np.arange(n).reshape([n, 1]).mul(chunk);
  const real = np.greaterEqual(c.add(np.arange(span).reshape([1, span])), window); // [n, span]
  const visible = np.logicalAnd(band.reshape([1, 1, chunk, span]), real.reshape([n, 1, 1, span]));
  const masked = np.where(visible.reshape([1, n, 1, chunk, span]), scores, -Infinity);
  const out = np.transpose(np.matmul(nn.softmax(masked, -1), perHead(chunkKeys(v))), [
    0,
    1,
    3,
    2,
    4,
  ]); // [B, n, chunk, H, hd]
  return out.reshape([b, tp, h, hd]).slice([], [0, t]);
}
