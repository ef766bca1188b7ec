import { assert, assertClose } from "../../assert.ts";
import {
  adamStateFromHost,
  adamStateToHost,
  adamStep,
  gradientOverflows,
  initAdamState,
} from "../../../lib/local/train/adam.ts";
import type { AdamParams } from "../../../lib/local/train/types.ts";
import { hostTensor, type NamedTensors } from "../../../lib/local/tensors.ts";

const P0 = { a: [1, -2], b: [0.5] };
const G1 = { a: [3, 4], b: [0] }; // global norm 5
const G2 = { a: [-1, 0.5], b: [2] };

function tensors(x: Record<string, number[]>): NamedTensors {
  return new Map(
    Object.entries(x).map(([k, v]) => [k, hostTensor([v.length], Float32Array.from(v))]),
  );
}

function grads(x: Record<string, number[]>): Map<string, Float32Array> {
  return new Map(Object.entries(x).map(([k, v]) => [k, Float32Array.from(v)]));
}

function host(t: NamedTensors): Record<string, number[]> {
  return Object.fromEntries([...t].map(([k, v]) => [k, Array.from(v.data)]));
}

/**
 * torch.optim.AdamW after `clip_grad_norm_`, written out by hand in float64 for one tensor
 * element sequence (flattened across the tree, since clipping uses the global norm).
 */
function reference(p: number[], grads: number[][], hp: Required<AdamParams>): number[] {
  const m = p.map(() => 0), v = p.map(() => 0);
  grads.forEach((g, step) => {
    const t = step + 1;
    const norm = Math.sqrt(g.reduce((s, x) => s + x * x, 0));
    const coef = hp.grad_clip_norm > 0 ? Math.min(1, hp.grad_clip_norm / (norm + 1e-6)) : 1;
    for (let i = 0; i < p.length; i++) {
      const gi = g[i] * coef;
      p[i] *= 1 - hp.learning_rate * hp.weight_decay;
      m[i] = hp.beta1 * m[i] + (1 - hp.beta1) * gi;
      v[i] = hp.beta2 * v[i] + (1 - hp.beta2) * gi * gi;
      const denom = Math.sqrt(v[i]) / Math.sqrt(1 - hp.beta2 ** t) + hp.eps;
      p[i] -= (hp.learning_rate / (1 - hp.beta1 ** t)) * m[i] / denom;
    }
  });
  return p;
}

const HP: Required<AdamParams> = {
  learning_rate: 0.1,
  beta1: 0.9,
  beta2: 0.95,
  eps: 1e-8,
  weight_decay: 0.1,
  grad_clip_norm: 2.5,
};

function twoSteps(hp: AdamParams) {
  const params = tensors(P0);
  const state = initAdamState(params);
  const norms = [G1, G2].map((g) => adamStep(params, grads(g), state, hp));
  return { params: host(params), state, norms };
}

Deno.test("adam: two AdamW steps with weight decay and global-norm clipping", () => {
  const { params, state, norms } = twoSteps(HP);
  const want = reference([...P0.a, ...P0.b], [[...G1.a, ...G1.b], [...G2.a, ...G2.b]], HP);
  assertClose([...params.a, ...params.b], want, 1e-5);
  assertClose(norms, [5, Math.sqrt(1 + 0.25 + 4)], 1e-6, "pre-clip norms");
  assert.equal(state.step, 2);
  // Step 1 by hand for a[0]: g = 3·(2.5/5) = 1.5 → m̂ = 1.5, v̂ = 2.25, so the Adam update is
  // −lr·1.5/1.5 = −0.1 after decay 1·(1 − 0.01) = 0.99: a[0] = 0.89 after the first step.
  const one = reference([1], [[1.5]], { ...HP, grad_clip_norm: 0 });
  assertClose(one, [0.89], 1e-6);
});

Deno.test("adam: clipping off (0) and weight decay off match the reference", () => {
  const hp = { ...HP, grad_clip_norm: 0, weight_decay: 0 };
  const { params } = twoSteps(hp);
  const want = reference([...P0.a, ...P0.b], [[...G1.a, ...G1.b], [...G2.a, ...G2.b]], hp);
  assertClose([...params.a, ...params.b], want, 1e-5);
});

Deno.test("adam: state survives export/import (exp_avg / exp_avg_sq names)", () => {
  const params = tensors(P0);
  const state = initAdamState(params);
  adamStep(params, grads(G1), state, HP);
  const saved = adamStateToHost(state, params);
  assert.deepEqual([...saved.tensors.keys()].sort(), [
    "exp_avg.a",
    "exp_avg.b",
    "exp_avg_sq.a",
    "exp_avg_sq.b",
  ]);
  assert.equal(saved.step, 1);
  const copy = tensors(host(params));
  const restored = adamStateFromHost(copy, saved);
  adamStep(copy, grads(G2), restored, HP);
  adamStep(params, grads(G2), state, HP);
  const a = host(copy), b = host(params);
  assertClose([...a.a, ...a.b], [...b.a, ...b.b], 0);
  assert.throws(
    () => adamStateFromHost(tensors({ a: [0, 0, 0], b: [0] }), saved),
    /exp_avg\.a has shape \[2\], expected \[3\]/,
  );
});

Deno.test("adam: a non-finite gradient norm changes nothing", () => {
  const params = tensors(P0);
  const state = initAdamState(params);
  const norm = adamStep(params, grads({ a: [Infinity, 0], b: [0] }), state, HP);
  assert.equal(norm, Infinity);
  assert.deepEqual(host(params), P0);
  assert.equal(state.step, 0);
});

Deno.test("adam: a finite gradient whose square overflows float32 changes nothing (no frozen weight)", () => {
  const params = tensors(P0);
  const state = initAdamState(params);
  // 1e20 is a float32; 1e40, its square, is not: v would be Infinity and the weight frozen.
  const norm = adamStep(params, grads({ a: [1e20, 0], b: [0] }), state, HP);
  assert.ok(Math.abs(norm - 1e20) <= 1e14, `norm ${norm}`);
  assert.ok(gradientOverflows(norm));
  assert.deepEqual(host(params), P0);
  assert.deepEqual([...state.v.values()].map((v) => [...v]), [[0, 0], [0]]);
  assert.equal(state.step, 0);
  assert.ok(!gradientOverflows(1e19), "a norm whose square fits float32 trains");
  assert.ok(gradientOverflows(NaN));
});
