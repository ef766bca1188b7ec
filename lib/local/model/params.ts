/**
 * Parameter names, shapes and initialisation of the local GPT and its LoRA adapters.
 *
 * Names are the safetensors keys of checkpoints. Linear weights are stored `[in, out]`
 * (so a layer is `x @ W + b`), as in nanoGPT's math rather than torch's `[out, in]` storage.
 *
 * Base model:
 * - `wte.weight [V, D]`, `wpe.weight [T, D]` (learned positions only; rotary models have none)
 * - `blocks.{i}.ln1.{weight,bias} [D]`, `blocks.{i}.attn.{q,k,v,o}.{weight [D, D], bias [D]}`
 * - `blocks.{i}.ln2.{weight,bias} [D]`, `blocks.{i}.mlp.fc.{weight [D, F], bias [F]}`,
 *   `blocks.{i}.mlp.proj.{weight [F, D], bias [D]}`
 * - `ln_f.{weight,bias} [D]`, `lm_head.weight [D, V]` (untied, no bias)
 *
 * LoRA adapter of a linear `<p>` with weight `[in, out]`: `<p>.lora_a [in, r]`,
 * `<p>.lora_b [r, out]`; the layer becomes `x @ W + b + (alpha / r) * (x @ A) @ B`.
 *
 * @module
 */

import { type LoraSpec, mlpWidth, type ModelConfig } from "./config.ts";
import { hostTensor, type NamedTensors } from "../tensors.ts";
import { Rng } from "../../util/random.ts";

/** A linear layer that can carry a LoRA adapter, with its `[in, out]` size. */
export interface LoraTarget {
  /** Parameter path prefix, e.g. `blocks.0.attn.q`. */
  path: string;
  inFeatures: number;
  outFeatures: number;
  /** Which `train_*` switch enables it. */
  group: "attn" | "mlp" | "unembed";
}

/** The linear layers eligible for LoRA, in canonical order. */
export function loraTargets(cfg: ModelConfig): LoraTarget[] {
  const d = cfg.dModel, f = mlpWidth(cfg);
  const out: LoraTarget[] = [];
  for (let i = 0; i < cfg.nLayers; i++) {
    for (const p of ["q", "k", "v", "o"]) {
      out.push({ path: `blocks.${i}.attn.${p}`, inFeatures: d, outFeatures: d, group: "attn" });
    }
    out.push({ path: `blocks.${i}.mlp.fc`, inFeatures: d, outFeatures: f, group: "mlp" });
    out.push({ path: `blocks.${i}.mlp.proj`, inFeatures: f, outFeatures: d, group: "mlp" });
  }
  out.push({ path: "lm_head", inFeatures: d, outFeatures: cfg.vocabSize, group: "unembed" });
  return out;
}

/** The LoRA targets a spec enables (`train_attn`, `train_mlp`, `train_unembed`). */
export function enabledLoraTargets(cfg: ModelConfig, lora: LoraSpec): LoraTarget[] {
  const on = { attn: lora.trainAttn, mlp: lora.trainMlp, unembed: lora.trainUnembed };
  return loraTargets(cfg).filter((t) => on[t.group]);
}

/** Shapes of every base parameter, by name, in canonical order. */
export function baseParameterShapes(cfg: ModelConfig): Map<string, number[]> {
  const d = cfg.dModel, f = mlpWidth(cfg);
  const shapes = new Map<string, number[]>();
  shapes.set("wte.weight", [cfg.vocabSize, d]);
  if (cfg.positions === "learned") shapes.set("wpe.weight", [cfg.maxSeqLen, d]);
  for (let i = 0; i < cfg.nLayers; i++) {
    const b = `blocks.${i}`;
    shapes.set(`${b}.ln1.weight`, [d]);
    shapes.set(`${b}.ln1.bias`, [d]);
    for (const p of ["q", "k", "v", "o"]) {
      shapes.set(`${b}.attn.${p}.weight`, [d, d]);
      shapes.set(`${b}.attn.${p}.bias`, [d]);
    }
    shapes.set(`${b}.ln2.weight`, [d]);
    shapes.set(`${b}.ln2.bias`, [d]);
    shapes.set(`${b}.mlp.fc.weight`, [d, f]);
    shapes.set(`${b}.mlp.fc.bias`, [f]);
    shapes.set(`${b}.mlp.proj.weight`, [f, d]);
    shapes.set(`${b}.mlp.proj.bias`, [d]);
  }
  shapes.set("ln_f.weight", [d]);
  shapes.set("ln_f.bias", [d]);
  shapes.set("lm_head.weight", [d, cfg.vocabSize]);
  return shapes;
}

/**
 * GPT-2 initialisation: normal(0, 0.02) weights, zero biases, unit LayerNorm gains, and the
 * residual projections (`attn.o`, `mlp.proj`) scaled by 1/sqrt(2·layers).
 */
export function initBaseParameters(cfg: ModelConfig, seed: number): NamedTensors {
  const rng = new Rng(seed);
  const out: NamedTensors = new Map();
  const residualStd = 0.02 / Math.sqrt(2 * cfg.nLayers);
  for (const [name, shape] of baseParameterShapes(cfg)) {
    const n = shape.reduce((a, b) => a * b, 1);
    let data: Float32Array;
    if (/(^|\.)ln(1|2|_f)\.weight$/.test(name)) data = new Float32Array(n).fill(1);
    else if (name.endsWith(".bias")) data = new Float32Array(n);
    else if (/(attn\.o|mlp\.proj)\.weight$/.test(name)) data = rng.normalArray(n, residualStd);
    else data = rng.normalArray(n, 0.02);
    out.set(name, hostTensor(shape, data));
  }
  return out;
}

/**
 * LoRA initialisation as in the LoRA paper: A ~ normal(0, 1/sqrt(in)), B = 0, so a fresh
 * adapter leaves the model's outputs unchanged and the first step's gradient flows into B.
 */
export function initLoraParameters(cfg: ModelConfig, lora: LoraSpec): NamedTensors {
  const rng = new Rng(lora.seed);
  const out: NamedTensors = new Map();
  for (const t of enabledLoraTargets(cfg, lora)) {
    out.set(
      `${t.path}.lora_a`,
      hostTensor(
        [t.inFeatures, lora.rank],
        rng.normalArray(t.inFeatures * lora.rank, 1 / Math.sqrt(t.inFeatures)),
      ),
    );
    out.set(`${t.path}.lora_b`, hostTensor([lora.rank, t.outFeatures]));
  }
  return out;
}

/** Throws unless `tensors` has exactly the base parameters of `cfg` with the right shapes. */
export function checkBaseParameters(cfg: ModelConfig, tensors: NamedTensors): void {
  const want = baseParameterShapes(cfg);
  for (const [name, shape] of want) {
    const t = tensors.get(name);
    if (!t) throw new Error(`base weights: missing tensor ${name}`);
    if (t.shape.join(",") !== shape.join(",")) {
      throw new Error(`base weights: ${name} has shape [${t.shape}], expected [${shape}]`);
    }
  }
  for (const name of tensors.keys()) {
    if (!want.has(name)) throw new Error(`base weights: unexpected tensor ${name}`);
  }
}
