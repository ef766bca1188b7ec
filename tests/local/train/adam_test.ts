import { numpy as np } from "@jax-js/jax";
import { assert, assertClose } from "../../assert.ts";
import { initEngine, type ParamTree, toHost } from "../../../lib/local/engine.ts";
import {
  adamStateFromHost,
  adamStateToHost,
  adamStep,
  initAdamState,
} from "../../../lib/local/train/adam.ts";
import type { AdamParams } from "../../../lib/local/train/types.ts";

const P0 = { a: [1, -2], b: [0.5] };
const G1 = { a: [3, 4], b: [0] }; // global norm 5
const G2 = { a: [-1, 0.5], b: [2] };

function device(x: Record<string, number[]>): ParamTree {
  return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, np.array(Float32Array.from(v))]));
}

async function host(t: ParamTree): Promise<Record<string, number[]>> {
  const h = await toHost(t);
  return Object.fromEntries([...h].map(([k, v]) => [k, Array.from(v.data)]));
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

async function twoSteps(hp: AdamParams) {
  await initEngine();
  let params = device(P0);
  let state = initAdamState(params);
  const norms: number[] = [];
  for (const g of [G1, G2]) {
    const out = adamStep(params, device(g), state, hp);
    params = out.params;
    state = out.state;
    norms.push((await out.gradNorm.data())[0]);
  }
  return { params: await host(params), state, norms };
}

Deno.test("adam: two AdamW steps with weight decay and global-norm clipping", async () => {
  const { params, state, norms } = await twoSteps(HP);
  const want = reference([...P0.a, ...P0.b], [[...G1.a, ...G1.b], [...G2.a, ...G2.b]], HP);
  assertClose([...params.a, ...params.b], want, 1e-5);
  assertClose(norms, [5, Math.sqrt(1 + 0.25 + 4)], 1e-6, "pre-clip norms");
  assert.equal(state.step, 2);
  // Step 1 by hand for a[0]: g = 3·(2.5/5) = 1.5 → m̂ = 1.5, v̂ = 2.25, so the Adam update is
  // −lr·1.5/1.5 = −0.1 after decay 1·(1 − 0.01) = 0.99: a[0] = 0.89 after the first step.
  const one = reference([1], [[1.5]], { ...HP, grad_clip_norm: 0 });
  assertClose(one, [0.89], 1e-6);
});

Deno.test("adam: clipping off (0) and weight decay off match the reference", async () => {
  const hp = { ...HP, grad_clip_norm: 0, weight_decay: 0 };
  const { params } = await twoSteps(hp);
  const want = reference([...P0.a, ...P0.b], [[...G1.a, ...G1.b], [...G2.a, ...G2.b]], hp);
  assertClose([...params.a, ...params.b], want, 1e-5);
});

Deno.test("adam: state survives export/import (exp_avg / exp_avg_sq names)", async () => {
  await initEngine();
  let params = device(P0);
  const first = adamStep(params, device(G1), initAdamState(params), HP);
  const saved = await adamStateToHost(first.state);
  assert.deepEqual([...saved.tensors.keys()].sort(), [
    "exp_avg.a",
    "exp_avg.b",
    "exp_avg_sq.a",
    "exp_avg_sq.b",
  ]);
  assert.equal(saved.step, 1);
  params = first.params;
  const restored = adamStateFromHost(params, saved);
  const viaRestore = adamStep(device(await host(params)), device(G2), restored, HP);
  const inPlace = adamStep(params, device(G2), first.state, HP);
  const a = await host(viaRestore.params), b = await host(inPlace.params);
  assertClose([...a.a, ...a.b], [...b.a, ...b.b], 0);
  assert.throws(
    () => adamStateFromHost(device({ a: [0, 0, 0], b: [0] }), saved),
    /exp_avg\.a has shape \[2\], expected \[3\]/,
  );
});
