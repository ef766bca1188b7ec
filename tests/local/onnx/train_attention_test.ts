/**
 * The learner's ONNX attention and rope subgraphs (`train_attention.ts`) against jax-js: the
 * forward against the model's attention (`gpt.ts`'s causal, `rope.ts`'s windowed) within 1e-5,
 * and the written-out backward against jax-js's autodiff within 1e-4, for T below, at and past
 * the window, a non-multiple of it, with and without a window, weights kept or recomputed.
 */

import { nn, numpy as np, valueAndGrad } from "@jax-js/jax";
import * as ort from "onnxruntime-node";
import { assertClose } from "../../assert.ts";
import { initEngine, readFloat32 } from "../../../lib/local/engine.ts";
import { ModelConfigSchema } from "../../../lib/local/model/config.ts";
import { applyRope, ropeTable, windowedAttention } from "../../../lib/local/model/rope.ts";
import { GraphBuilder } from "../../../lib/local/onnx/graph.ts";
import { GPT_OPSET } from "../../../lib/local/onnx/gpt_graph.ts";
import { causalAttention, ropeForward } from "../../../lib/local/onnx/train_attention.ts";
import { Rng } from "../../../lib/util/random.ts";

await initEngine();

const [B, H, HD] = [2, 2, 4];

type F32 = Float32Array<ArrayBuffer>;
const randn = (rng: Rng, n: number): F32 => new Float32Array(rng.normalArray(n));

/** `[B, X, Y, hd]` → `[B, Y, X, hd]` on the host (jax-js is time-major, the graph head-major). */
function swap12(x: Float32Array, b: number, n1: number, n2: number, d: number): F32 {
  const out = new Float32Array(x.length);
  for (let i = 0; i < b; i++) {
    for (let a = 0; a < n1; a++) {
      for (let c = 0; c < n2; c++) {
        const from = ((i * n1 + a) * n2 + c) * d, to = ((i * n2 + c) * n1 + a) * d;
        out.set(x.subarray(from, from + d), to);
      }
    }
  }
  return out;
}

async function run(model: Uint8Array, feeds: Record<string, ort.Tensor>) {
  const session = await ort.InferenceSession.create(model, { graphOptimizationLevel: "all" });
  const out = await session.run(feeds);
  await session.release();
  return (name: string) => out[name].data as Float32Array;
}

/** The graph's y, dq, dk, dv (time-major) for q, k, v, dy (time-major `[B, T, H, hd]`). */
async function graphAttention(
  t: number,
  window: number | undefined,
  block: number | undefined,
  recompute: boolean,
  x: { q: F32; k: F32; v: F32; dy: F32 },
) {
  const g = new GraphBuilder();
  const dims = ["batch", H, "time", HD];
  const [q, k, v, dy] = ["q", "k", "v", "dy"].map((n) => g.input(n, "float", dims));
  const tokens = g.input("tokens", "int64", ["batch", "time"]);
  const att = causalAttention(g, q, k, v, { window, block, tokens, recompute });
  g.output(att.y, "y", "float", dims);
  const d = att.backward(dy);
  g.output(d.dq, "dq", "float", dims);
  g.output(d.dk, "dk", "float", dims);
  g.output(d.dv, "dv", "float", dims);
  const shape = [B, H, t, HD];
  const feed = (a: Float32Array) => new ort.Tensor("float32", swap12(a, B, t, H, HD), shape);
  const out = await run(g.toModel({ opset: GPT_OPSET }), {
    q: feed(x.q),
    k: feed(x.k),
    v: feed(x.v),
    dy: feed(x.dy),
    tokens: new ort.Tensor("int64", new BigInt64Array(B * t), [B, t]),
  });
  const back = (name: string) => swap12(out(name), B, H, t, HD);
  return { y: back("y"), dq: back("dq"), dk: back("dk"), dv: back("dv") };
}

/** jax-js's attention and its autodiff gradients of `Σ y ⊙ dy`, all time-major. */
async function jaxAttention(
  t: number,
  window: number | undefined,
  x: { q: F32; k: F32; v: F32; dy: F32 },
) {
  const shape = [B, t, H, HD];
  const arr = (a: F32) => np.array(a, { shape });
  const attend = (q: np.Array, k: np.Array, v: np.Array) =>
    window
      ? windowedAttention(q, k, v, window, Math.min(window, 4))
      : nn.dotProductAttention(q, k, v, { isCausal: true });
  const y = attend(arr(x.q), arr(x.k), arr(x.v));
  const loss = (q: np.Array, k: np.Array, v: np.Array, dy: np.Array) =>
    attend(q, k, v).mul(dy).sum();
  const [value, [dq, dk, dv]] = valueAndGrad(loss, { argnums: [0, 1, 2] })(
    arr(x.q),
    arr(x.k),
    arr(x.v),
    arr(x.dy),
  );
  value.dispose();
  return {
    y: await readFloat32(y),
    dq: await readFloat32(dq),
    dk: await readFloat32(dk),
    dv: await readFloat32(dv),
  };
}

const CASES: { t: number; window?: number; block?: number; recompute?: boolean }[] = [
  { t: 5, window: 8 }, // T < W
  { t: 8, window: 8 }, // T = W
  { t: 13, window: 8 }, // not a multiple
  { t: 40, window: 8 }, // 5W
  { t: 40, window: 8, block: 8 },
  { t: 37, window: 8, block: 2, recompute: true },
  { t: 19, window: 12, block: 4 },
  { t: 1 },
  { t: 13 },
  { t: 40, recompute: true },
];

for (const c of CASES) {
  const what =
    `T ${c.t}, ${c.window ? `window ${c.window}, block ${c.block ?? "default"}` : "full"}` +
    (c.recompute ? ", recomputed" : "");
  Deno.test(`train attention: ${what}: y within 1e-5 and dq, dk, dv within 1e-4 of jax-js`, async () => {
    const rng = new Rng(c.t * 7 + (c.window ?? 0));
    const n = B * c.t * H * HD;
    const x = {
      q: randn(rng, n),
      k: randn(rng, n),
      v: randn(rng, n),
      dy: randn(rng, n),
    };
    const got = await graphAttention(c.t, c.window, c.block, !!c.recompute, x);
    const want = await jaxAttention(c.t, c.window, x);
    assertClose(got.y, want.y, 1e-5, `${what}: y`);
    for (const key of ["dq", "dk", "dv"] as const) {
      assertClose(got[key], want[key], 1e-4, `${what}: ${key}`);
    }
  });
}

Deno.test("train attention: rope forward rotates as the model does; its backward is jax-js's gradient and the exact transpose far out", async () => {
  const cfg = ModelConfigSchema.parse({
    vocabSize: 11,
    dModel: H * 8,
    nHeads: H,
    nLayers: 1,
    maxSeqLen: 70000,
    positions: "rope",
  });
  const hd = 8, t = 6, rng = new Rng(5), n = B * t * H * hd;
  const g = new GraphBuilder();
  const dims = ["batch", H, "time", hd];
  const x = g.input("x", "float", dims), dy = g.input("dy", "float", dims);
  const positions = g.input("positions", "int64", ["batch", "time"]);
  const rope = ropeForward(g, cfg, x, positions);
  g.output(rope.y, "y", "float", dims);
  g.output(rope.backward(dy), "dx", "float", dims);
  const model = g.toModel({ opset: GPT_OPSET });
  const xs = randn(rng, n), dys = randn(rng, n);
  const feeds = (start: number) => ({
    x: new ort.Tensor("float32", swap12(xs, B, t, H, hd), [B, H, t, hd]),
    dy: new ort.Tensor("float32", swap12(dys, B, t, H, hd), [B, H, t, hd]),
    positions: new ort.Tensor(
      "int64",
      BigInt64Array.from({ length: B * t }, (_, i) => BigInt(start + (i % t))),
      [B, t],
    ),
  });

  // Positions 0..T-1: jax-js's applyRope and its autodiff.
  const out = await run(model, feeds(0));
  const shape = [B, t, H, hd];
  const [value, dx] = valueAndGrad((a: np.Array, b: np.Array) => applyRope(a, 10000).mul(b).sum())(
    np.array(xs, { shape }),
    np.array(dys, { shape }),
  );
  value.dispose();
  const y = applyRope(np.array(xs, { shape }), 10000);
  assertClose(swap12(out("y"), B, H, t, hd), await readFloat32(y), 1e-5, "y");
  assertClose(swap12(out("dx"), B, H, t, hd), await readFloat32(dx), 1e-5, "dx");

  // Far positions: y against the host table, and backward(dy) is the transpose of the rotation.
  const start = 65000, far = await run(model, feeds(start));
  const table = ropeTable(start, t, hd, cfg.ropeTheta), half = hd / 2;
  const xh = swap12(xs, B, t, H, hd), dyh = swap12(dys, B, t, H, hd);
  const want = new Float32Array(n);
  let forward = 0, backward = 0;
  for (let i = 0; i < n; i += hd) {
    const p = Math.floor(i / hd) % t;
    for (let j = 0; j < half; j++) {
      const c = table.cos[p * half + j], s = table.sin[p * half + j];
      want[i + j] = xh[i + j] * c - xh[i + j + half] * s;
      want[i + j + half] = xh[i + j + half] * c + xh[i + j] * s;
    }
  }
  for (let i = 0; i < n; i++) {
    forward += far("y")[i] * dyh[i];
    backward += xh[i] * far("dx")[i];
  }
  assertClose(far("y"), want, 1e-5, "far y");
  assertClose([backward], [forward], 1e-4, "⟨x, backward(dy)⟩ = ⟨rotate(x), dy⟩");
});

Deno.test("train attention: layers of one graph share the mask and each attends correctly", async () => {
  const [t, window] = [29, 8], n = B * t * H * HD, rng = new Rng(11);
  const [q, k, v] = [randn(rng, n), randn(rng, n), randn(rng, n)];
  for (const w of [window, undefined]) {
    const g = new GraphBuilder();
    const dims = ["batch", H, "time", HD];
    const [qi, ki, vi] = ["q", "k", "v"].map((name) => g.input(name, "float", dims));
    const tokens = g.input("tokens", "int64", ["batch", "time"]);
    const first = causalAttention(g, qi, ki, vi, { window: w, block: 4, tokens });
    const second = causalAttention(g, first.y, ki, vi, { window: w, block: 4, tokens });
    g.output(second.y, "y", "float", dims);
    const feed = (a: Float32Array) =>
      new ort.Tensor("float32", swap12(a, B, t, H, HD), [B, H, t, HD]);
    const out = await run(g.toModel({ opset: GPT_OPSET }), {
      q: feed(q),
      k: feed(k),
      v: feed(v),
      tokens: new ort.Tensor("int64", new BigInt64Array(B * t), [B, t]),
    });
    const shape = [B, t, H, HD];
    const attend = (a: np.Array) =>
      w
        ? windowedAttention(a, np.array(k, { shape }), np.array(v, { shape }), w, 4)
        : nn.dotProductAttention(a, np.array(k, { shape }), np.array(v, { shape }), {
          isCausal: true,
        });
    const want = await readFloat32(attend(attend(np.array(q, { shape }))));
    assertClose(swap12(out("y"), B, H, t, HD), want, 1e-5, `two layers, window ${w}`);
  }
});
