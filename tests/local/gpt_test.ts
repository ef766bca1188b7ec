import { jit, numpy as np, tree, valueAndGrad } from "@jax-js/jax";
import { assert, assertClose } from "../assert.ts";
import {
  initEngine,
  int32Array,
  type ParamTree,
  toDevice,
  toHost,
} from "../../lib/local/engine.ts";
import { forwardSpec, gptLogits, targetLogprobs } from "../../lib/local/model/gpt.ts";
import {
  type LoraSpec,
  LoraSpecSchema,
  type ModelConfig,
  ModelConfigSchema,
} from "../../lib/local/model/config.ts";
import { initBaseParameters, initLoraParameters } from "../../lib/local/model/params.ts";
import { Rng } from "../../lib/util/random.ts";
import type { HostTensor, NamedTensors } from "../../lib/local/tensors.ts";

// A micro model small enough for a float64 host oracle.
const CFG: ModelConfig = ModelConfigSchema.parse({
  vocabSize: 11,
  dModel: 8,
  nLayers: 2,
  nHeads: 2,
  maxSeqLen: 6,
});
const LORA: LoraSpec = LoraSpecSchema.parse({ rank: 2, alpha: 4, seed: 5 });

/** LoRA tensors with a non-zero B, so the adapter changes the outputs. */
function randomAdapter(cfg: ModelConfig, lora: LoraSpec, seed: number): NamedTensors {
  const rng = new Rng(seed);
  const out = initLoraParameters(cfg, lora);
  for (const [name, t] of out) {
    if (name.endsWith("lora_b")) {
      out.set(name, { shape: t.shape, data: rng.normalArray(t.data.length, 0.3) });
    }
  }
  return out;
}

Deno.test("gpt: logits [B,T,V] and target logprobs [B,T] / [B,T,K]", async () => {
  await initEngine();
  const base = toDevice(initBaseParameters(CFG, 1));
  const tokens = int32Array([1, 2, 3, 4, 5, 6, 7, 8], [2, 4]);
  const logits = gptLogits(tree.ref(base), null, tokens.ref, forwardSpec(CFG, null));
  assert.deepEqual(logits.shape, [2, 4, 11]);
  const lp = targetLogprobs(logits.ref, tokens.ref);
  assert.deepEqual(lp.shape, [2, 4]);
  const lpk = targetLogprobs(logits, np.stack([tokens.ref, tokens], -1));
  assert.deepEqual(lpk.shape, [2, 4, 2]);
  const one = await lp.data(), two = await lpk.data();
  for (let i = 0; i < one.length; i++) assert.equal(two[2 * i], one[i]);
  tree.dispose(base);
});

Deno.test("gpt: matches a float64 host implementation of the architecture, with LoRA", async () => {
  await initEngine();
  const baseHost = initBaseParameters(CFG, 2);
  // Non-trivial LayerNorm affine and biases, so each of them is exercised.
  const rng = new Rng(9);
  for (const [name, t] of baseHost) {
    if (/ln|bias/.test(name)) {
      baseHost.set(name, { shape: t.shape, data: rng.normalArray(t.data.length, 0.5) });
    }
  }
  const adapterHost = randomAdapter(CFG, LORA, 3);
  const tokens = [3, 1, 4, 1, 5, 9];
  const logits = gptLogits(
    toDevice(baseHost),
    toDevice(adapterHost),
    int32Array(tokens, [1, tokens.length]),
    forwardSpec(CFG, LORA),
  );
  const got = await logits.data();
  const want = oracleLogits(CFG, baseHost, adapterHost, LORA.alpha / LORA.rank, tokens);
  assertClose(got, want.flat(), 1e-5, "logits");
});

Deno.test("gpt: a fresh LoRA adapter (B = 0) gives identical logits to no adapter", async () => {
  await initEngine();
  const base = toDevice(initBaseParameters(CFG, 1));
  const lora = toDevice(initLoraParameters(CFG, LORA));
  const tokens = int32Array([1, 2, 3, 4, 5, 6], [1, 6]);
  const spec = forwardSpec(CFG, LORA);
  const withLora = await gptLogits(tree.ref(base), lora, tokens.ref, spec).data();
  const without = await gptLogits(tree.ref(base), {}, tokens, spec).data();
  assert.deepEqual(withLora, without);
  tree.dispose(base);
});

Deno.test("gpt: jitted valueAndGrad works w.r.t. the LoRA tree and w.r.t. the base tree", async () => {
  await initEngine();
  const base = toDevice(initBaseParameters(CFG, 1));
  const lora = toDevice(randomAdapter(CFG, LORA, 4));
  const tokens = int32Array([1, 2, 3, 4, 5, 6, 7, 8], [2, 4]);
  const spec = forwardSpec(CFG, LORA);
  const loss = (b: ParamTree, l: ParamTree, t: np.Array) =>
    targetLogprobs(gptLogits(b, l, t.ref, spec), t).mean().neg();

  const [v1, gLora] = jit(valueAndGrad(loss, { argnums: 1 }))(
    tree.ref(base),
    tree.ref(lora),
    tokens.ref,
  );
  assert.deepEqual(Object.keys(gLora).sort(), Object.keys(lora).sort());
  const [v2, gBase] = jit(valueAndGrad(loss, { argnums: 0 }))(
    tree.ref(base),
    tree.ref(lora),
    tokens.ref,
  );
  assert.deepEqual(Object.keys(gBase).sort(), Object.keys(base).sort());
  assertClose(await v1.data(), await v2.data(), 1e-6, "loss"); // fusion differs by an ulp

  // Finite-difference check of one LoRA entry (float32, so a loose tolerance).
  const name = "blocks.1.mlp.fc.lora_b";
  const analytic = (await toHost(gLora)).get(name)!.data[3];
  const host = await toHost(lora);
  const eps = 1e-2;
  const at = async (delta: number) => {
    const l = new Map(host);
    const data = host.get(name)!.data.slice();
    data[3] += delta;
    l.set(name, { shape: host.get(name)!.shape, data });
    return (await loss(tree.ref(base), toDevice(l), tokens.ref).data())[0];
  };
  const numeric = ((await at(eps)) - (await at(-eps))) / (2 * eps);
  assertClose([analytic], [numeric], 2e-2, "d loss / d lora_b");

  // Arguments passed with tree.ref are still alive afterwards.
  assert.equal(base["wte.weight"].refCount, 1);
  assert.equal(lora[name].refCount, 1);
  tree.dispose([gLora, gBase, base, lora]);
  tokens.dispose();
});

/** Float64 reference forward of the architecture, one sequence, straight from its definition. */
function oracleLogits(
  cfg: ModelConfig,
  p: NamedTensors,
  lora: NamedTensors,
  scale: number,
  tokens: number[],
): number[][] {
  const w = (n: string) => p.get(n)!;
  const vecMat = (x: number[], m: HostTensor) => {
    const [rows, cols] = m.shape;
    return Array.from({ length: cols }, (_, j) => {
      let s = 0;
      for (let i = 0; i < rows; i++) s += x[i] * m.data[i * cols + j];
      return s;
    });
  };
  const row = (m: HostTensor, i: number) =>
    Array.from(m.data.subarray(i * m.shape[1], (i + 1) * m.shape[1]));
  const add = (a: number[], b: ArrayLike<number>) => a.map((x, i) => x + b[i]);
  const linear = (x: number[], path: string) => {
    let y = vecMat(x, w(`${path}.weight`));
    if (p.has(`${path}.bias`)) y = add(y, w(`${path}.bias`).data);
    const a = lora.get(`${path}.lora_a`);
    if (a) y = add(y, vecMat(vecMat(x, a), lora.get(`${path}.lora_b`)!).map((z) => z * scale));
    return y;
  };
  const layerNorm = (x: number[], path: string) => {
    const mean = x.reduce((s, z) => s + z, 0) / x.length;
    const variance = x.reduce((s, z) => s + (z - mean) ** 2, 0) / x.length;
    return x.map((z, i) =>
      (z - mean) / Math.sqrt(variance + 1e-5) * w(`${path}.weight`).data[i] +
      w(`${path}.bias`).data[i]
    );
  };
  const gelu = (z: number) =>
    0.5 * z * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (z + 0.044715 * z ** 3)));
  const hd = cfg.dModel / cfg.nHeads;
  let xs = tokens.map((tok, t) => add(row(w("wte.weight"), tok), row(w("wpe.weight"), t)));
  for (let l = 0; l < cfg.nLayers; l++) {
    const b = `blocks.${l}`;
    const h = xs.map((x) => layerNorm(x, `${b}.ln1`));
    const q = h.map((x) => linear(x, `${b}.attn.q`));
    const k = h.map((x) => linear(x, `${b}.attn.k`));
    const v = h.map((x) => linear(x, `${b}.attn.v`));
    const att = q.map((qt, t) => {
      const out = new Array(cfg.dModel).fill(0);
      for (let head = 0; head < cfg.nHeads; head++) {
        const o = head * hd;
        const scores = k.slice(0, t + 1).map((ks) => {
          let s = 0;
          for (let i = 0; i < hd; i++) s += qt[o + i] * ks[o + i];
          return s / Math.sqrt(hd);
        });
        const m = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - m));
        const z = e.reduce((a, c) => a + c, 0);
        e.forEach((ei, s) => {
          for (let i = 0; i < hd; i++) out[o + i] += (ei / z) * v[s][o + i];
        });
      }
      return linear(out, `${b}.attn.o`);
    });
    xs = xs.map((x, t) => add(x, att[t]));
    xs = xs.map((x) =>
      add(x, linear(linear(layerNorm(x, `${b}.ln2`), `${b}.mlp.fc`).map(gelu), `${b}.mlp.proj`))
    );
  }
  return xs.map((x) => linear(layerNorm(x, "ln_f"), "lm_head"));
}
