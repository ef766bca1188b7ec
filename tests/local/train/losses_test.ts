import * as ort from "onnxruntime-node";
import { assert, assertClose } from "../../assert.ts";
import { GraphBuilder } from "../../../lib/local/onnx/graph.ts";
import { GPT_OPSET } from "../../../lib/local/onnx/gpt_graph.ts";
import { LOSSES, type LossFnName, resolveLossConfig } from "../../../lib/local/train/losses.ts";

/** Host values of one loss evaluation (per-token arrays of equal length). */
interface Case {
  lp: number[];
  weights: number[];
  logprobs?: number[];
  advantages?: number[];
  config?: Record<string, number>;
  shape?: number[];
}

/**
 * Loss value, d loss / d lp (the loss's own gradient subgraph) and the metric sums: the loss
 * alone as an ONNX graph over per-token inputs of `shape`, run on ONNX Runtime.
 */
async function evaluate(name: LossFnName, c: Case) {
  const shape = c.shape ?? [1, c.lp.length];
  const config = resolveLossConfig(name, c.config ?? {});
  const g = new GraphBuilder();
  const dims = shape.map((_, i) => `d${i}`);
  const perToken = (n: string) => g.op("Flatten", [g.input(n, "float", dims)], { axis: { i: 2 } });
  const cfg = Object.fromEntries(
    Object.keys(config).map((k) => [k, g.input(`config.${k}`, "float", [])]),
  );
  const terms = LOSSES[name].graph(g, {
    lp: perToken("lp"),
    weights: perToken("weights"),
    ...(c.logprobs ? { logprobs: perToken("logprobs") } : {}),
    ...(c.advantages ? { advantages: perToken("advantages") } : {}),
  }, cfg);
  g.output(terms.loss, "loss", "float", []);
  g.output(terms.dlp, "dlp", "float", ["n", "k"]);
  for (const [k, v] of Object.entries(terms.stats)) g.output(v, `stat.${k}`, "float", []);
  const session = await ort.InferenceSession.create(g.toModel({ opset: GPT_OPSET }));
  const t = (x: number[]) => new ort.Tensor("float32", Float32Array.from(x), shape);
  const feeds: Record<string, ort.Tensor> = { lp: t(c.lp), weights: t(c.weights) };
  if (c.logprobs) feeds.logprobs = t(c.logprobs);
  if (c.advantages) feeds.advantages = t(c.advantages);
  for (const [k, v] of Object.entries(config)) {
    feeds[`config.${k}`] = new ort.Tensor("float32", Float32Array.of(v), []);
  }
  const out = await session.run(feeds);
  await session.release();
  const sums: Record<string, number> = {};
  for (const k of Object.keys(terms.stats)) sums[k] = (out[`stat.${k}`].data as Float32Array)[0];
  return {
    value: (out.loss.data as Float32Array)[0],
    grad: Array.from(out.dlp.data as Float32Array),
    sums,
  };
}

/** Central differences of the loss value in float32, step h. */
async function numericGrad(name: LossFnName, c: Case, h = 1e-2): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < c.lp.length; i++) {
    const at = (d: number) => evaluate(name, { ...c, lp: c.lp.map((x, j) => j === i ? x + d : x) });
    out.push(((await at(h)).value - (await at(-h)).value) / (2 * h));
  }
  return out;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const clip = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));

Deno.test("cross_entropy: L = Σ −w·lp with real and negative weights", async () => {
  const c = { lp: [-1, -2, -0.5, -3], weights: [1, -0.5, 2, 0.25] };
  const { value, grad } = await evaluate("cross_entropy", c);
  // −(1·−1 + −0.5·−2 + 2·−0.5 + 0.25·−3) = −(−1 + 1 − 1 − 0.75) = 1.75
  assertClose([value], [1.75], 1e-6);
  assertClose(grad, [-1, 0.5, -2, -0.25], 1e-6);
  assertClose(grad, await numericGrad("cross_entropy", c), 1e-3, "finite differences");
});

Deno.test("cross_entropy: 2-D targets [N, K] sum over every (t, k)", async () => {
  const c = {
    lp: [-1, -2, -3, -0.1, -0.2, -0.3],
    weights: [0.5, 0.3, 0.2, 1, 0, -1],
    shape: [1, 2, 3],
  };
  const { value, grad } = await evaluate("cross_entropy", c);
  assertClose([value], [-sum(c.lp.map((l, i) => c.weights[i] * l))], 1e-6);
  assertClose(grad, c.weights.map((w) => -w), 1e-6);
});

Deno.test("importance_sampling: L = −Σ r·A, dL/dlp = −r·A", async () => {
  const c = {
    lp: [-1, -0.5, -2],
    logprobs: [-1.2, -0.4, -2],
    advantages: [1, -2, 0.5],
    weights: [1, 1, 1],
  };
  const r = c.lp.map((l, i) => Math.exp(l - c.logprobs[i]));
  const { value, grad } = await evaluate("importance_sampling", c);
  assertClose([value], [-sum(r.map((x, i) => x * c.advantages[i]))], 1e-6);
  assertClose(grad, r.map((x, i) => -x * c.advantages[i]), 1e-6);
  assertClose(grad, await numericGrad("importance_sampling", c), 1e-3, "finite differences");
});

// Ratios 1.5, 0.5, 1.5, 0.5, 1.0 against A = +, +, −, −, +: clipped (no gradient) exactly
// where A > 0 and r > 1.2, or A < 0 and r < 0.8.
const PPO_CASE = {
  lp: [1.5, 0.5, 1.5, 0.5, 1.0].map(Math.log),
  logprobs: [0, 0, 0, 0, 0],
  advantages: [2, 1, -1, -3, 0.5],
  weights: [1, 1, 1, 1, 1],
};

Deno.test("ppo: value, zero gradient in the clipped regions, clip_fraction", async () => {
  const { value, grad, sums } = await evaluate("ppo", PPO_CASE);
  const r = [1.5, 0.5, 1.5, 0.5, 1.0], a = PPO_CASE.advantages;
  const obj = r.map((x, i) => Math.min(x * a[i], clip(x, 0.8, 1.2) * a[i]));
  assertClose([value], [-sum(obj)], 1e-6);
  assertClose(grad, [0, -0.5 * 1, -1.5 * -1, 0, -1.0 * 0.5], 1e-5);
  assertClose(grad, await numericGrad("ppo", PPO_CASE, 1e-3), 2e-3, "finite differences");
  assert.deepEqual(sums, { clipped: 2, active: 5 });
  assertClose([LOSSES.ppo.metrics(sums)["clip_fraction:mean"]], [0.4]);
});

Deno.test("ppo: loss_fn_config thresholds are honoured", async () => {
  const c = { ...PPO_CASE, config: { clip_low_threshold: 0.4, clip_high_threshold: 1.6 } };
  const { grad, sums } = await evaluate("ppo", c);
  const r = [1.5, 0.5, 1.5, 0.5, 1.0];
  assertClose(grad, r.map((x, i) => -x * c.advantages[i]), 1e-5);
  assert.equal(sums.clipped, 0);
});

Deno.test("cispo: coefficient is the stop-gradient clipped ratio", async () => {
  const c = {
    lp: [Math.log(5), Math.log(0.5), Math.log(2)],
    logprobs: [0, 0, 0],
    advantages: [1, -1, 2],
    weights: [1, 1, 1],
  };
  const { value, grad, sums } = await evaluate("cispo", c);
  const coef = [4, 0.5, 2]; // clip(r, 0, 4) with the defaults lo 0, hi 4
  assertClose([value], [-sum(coef.map((k, i) => k * c.lp[i] * c.advantages[i]))], 1e-5);
  // d/dlp of −sg(k)·lp·A is −k·A (no ∂k/∂lp term, even where the ratio is not clipped).
  assertClose(grad, coef.map((k, i) => -k * c.advantages[i]), 1e-5);
  const numeric = await numericGrad("cispo", c, 1e-3);
  assert.ok(Math.abs(numeric[2] - grad[2]) > 0.5, "finite differences see ∂r/∂lp; cispo must not");
  assert.deepEqual(sums, { clipped: 1, active: 3 });
});

Deno.test("dro: L = −Σ [lp·A − ½β(lp − q)²] and its β term", async () => {
  const c = {
    lp: [-1, -0.5, -2],
    logprobs: [-1.5, -0.5, -1],
    advantages: [1, -1, 0.5],
    weights: [1, 1, 1],
    config: { beta: 0.3 },
  };
  const { value, grad } = await evaluate("dro", c);
  const d = c.lp.map((l, i) => l - c.logprobs[i]);
  const a = c.advantages;
  assertClose([value], [-sum(c.lp.map((l, i) => l * a[i] - 0.15 * d[i] ** 2))], 1e-6);
  assertClose(grad, d.map((x, i) => -a[i] + 0.3 * x), 1e-6);
  assertClose(grad, await numericGrad("dro", c), 1e-3, "finite differences");
  const noBeta = await evaluate("dro", { ...c, config: { beta: 0 } });
  assertClose(noBeta.grad, a.map((x) => -x), 1e-6);
});

Deno.test("masks: weight-0 positions contribute exactly 0 to value and gradient", async () => {
  // Position 1 is masked and holds values that would overflow (exp(lp − q) = ∞).
  const base = { lp: [-1, -0.5, -2], logprobs: [-1, -1e4, -1.5], advantages: [1, 1e30, -1] };
  for (const name of ["importance_sampling", "ppo", "cispo", "dro"] as const) {
    const masked = await evaluate(name, { ...base, weights: [1, 0, 1] });
    const dropped = await evaluate(name, {
      lp: [-1, -2],
      logprobs: [-1, -1.5],
      advantages: [1, -1],
      weights: [1, 1],
    });
    assertClose([masked.value], [dropped.value], 1e-6, `${name} value`);
    assert.equal(masked.grad[1], 0, `${name} gradient at the masked position`);
    assertClose([masked.grad[0], masked.grad[2]], dropped.grad, 1e-6, `${name} gradient`);
  }
});

Deno.test("RL weights multiply each token's term", async () => {
  const c = {
    lp: [-1, -0.5],
    logprobs: [-1.2, -0.4],
    advantages: [1, -2],
    weights: [0.5, 3],
  };
  const { value, grad } = await evaluate("importance_sampling", c);
  const r = c.lp.map((l, i) => Math.exp(l - c.logprobs[i]));
  assertClose([value], [-sum(r.map((x, i) => c.weights[i] * x * c.advantages[i]))], 1e-6);
  assertClose(grad, r.map((x, i) => -c.weights[i] * x * c.advantages[i]), 1e-6);
});
