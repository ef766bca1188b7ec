import { nn, numpy as np } from "@jax-js/jax";
import { assert } from "../assert.ts";
import { initEngine } from "../../lib/local/engine.ts";
import {
  applyRope,
  ropeFrequency,
  ropeTable,
  windowedAttention,
} from "../../lib/local/model/rope.ts";
import { Rng } from "../../lib/util/random.ts";

function randomArray(rng: Rng, shape: number[]): np.Array {
  const n = shape.reduce((a, b) => a * b, 1);
  return np.array(new Float32Array(rng.normalArray(n, 1)), { shape });
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

Deno.test("rope: windowed attention equals full attention masked to the window", async () => {
  await initEngine();
  const rng = new Rng(3);
  for (const [t, window, chunk] of [[37, 8, 4], [40, 8, 8], [5, 16, 4], [64, 12, 3]]) {
    const shape = [2, t, 2, 4];
    const q = randomArray(rng, shape), k = randomArray(rng, shape), v = randomArray(rng, shape);
    const want = nn.dotProductAttention(q.ref, k.ref, v.ref, {
      isCausal: true,
      localWindowSize: [window - 1, 0],
    });
    const got = windowedAttention(q, k, v, window, chunk);
    assert.deepEqual(got.shape, shape);
    const d = maxDiff(await got.data(), await want.data());
    assert(d < 1e-5, `T ${t}, window ${window}, chunk ${chunk}: max |Δ| ${d}`);
  }
});

Deno.test("rope: rotates each head's halves by p·θ^(-2i/hd), exact at large positions", async () => {
  await initEngine();
  const rng = new Rng(4);
  const [t, h, hd, theta] = [6, 2, 8, 10000];
  const x = randomArray(rng, [1, t, h, hd]);
  const host = await x.ref.data();
  const got = await applyRope(x, theta).data();
  const half = hd / 2;
  let worst = 0;
  for (let p = 0; p < t; p++) {
    for (let head = 0; head < h; head++) {
      for (let i = 0; i < half; i++) {
        const a = p * ropeFrequency(i, hd, theta);
        const base = (p * h + head) * hd;
        const x1 = host[base + i], x2 = host[base + i + half];
        worst = Math.max(
          worst,
          Math.abs(got[base + i] - (x1 * Math.cos(a) - x2 * Math.sin(a))),
          Math.abs(got[base + i + half] - (x2 * Math.cos(a) + x1 * Math.sin(a))),
        );
      }
    }
  }
  assert(worst < 1e-5, `max |Δ| ${worst}`);
  // The table reduces angles mod 2π in double precision: at position 65,535 it is the true cosine.
  const far = ropeTable(65535, 1, hd, theta);
  assert(Math.abs(far.cos[0] - Math.cos(65535)) < 1e-7);
});
