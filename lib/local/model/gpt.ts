/**
 * The local GPT in jax-js: a pre-LayerNorm GPT-2 style decoder with optional LoRA adapters,
 * written as pure functions of parameter trees so they can be `jit`ted and differentiated.
 *
 * ```
 * x = wte[tokens] + wpe[positions]        (rotary models: x = wte[tokens], q and k rotated)
 * for each block:  x = x + attn(ln1(x));  x = x + mlp(ln2(x))
 * logits = ln_f(x) @ lm_head
 * ```
 *
 * - LayerNorm: eps 1e-5, weight and bias, biased variance (as torch.nn.LayerNorm).
 * - attn: q, k, v, o linears with bias; softmax(q·kᵀ/√hd)·v per head, causal.
 * - mlp: fc → GELU (tanh approximation) → proj.
 * - Linears are `x @ W + b` with W `[in, out]`; with a LoRA adapter on `<p>` they become
 *   `x @ W + b + scale · (x @ A) @ B`, `scale = alpha / rank` (names in `params.ts`).
 *
 * Ownership: every function here consumes its array arguments (jax-js convention); pass
 * `tree.ref(base)` to keep the weights. Differentiate with `valueAndGrad(f, {argnums})`
 * over argument 0 (`base`, full fine-tuning) or 1 (`lora`, LoRA training): both are plain
 * pytrees. Options that change the traced graph ({@link ForwardSpec}) are plain numbers, so
 * pass them as static arguments (`jit(f, {staticArgnums})`) or close over them.
 *
 * @module
 */

import { nn, numpy as np } from "@jax-js/jax";
import type { ParamTree } from "../engine.ts";
import type { ModelConfig } from "./config.ts";
import { applyRope, windowedAttention } from "./rope.ts";

/**
 * The graph-shaping options of a forward pass. A plain JSON object so that it can be a
 * static `jit` argument: jax-js keys its compile cache on `JSON.stringify` of static args.
 */
export interface ForwardSpec {
  /** Attention heads (cannot be read off the weight shapes). */
  nHeads: number;
  /** LoRA scale `alpha / rank`; unused without adapters. */
  loraScale: number;
  /** Rotary base θ of a `positions: "rope"` model; 0 for learned positions. */
  rope: number;
  /** Sliding attention window; 0 for full causal attention. */
  window: number;
}

/** The {@link ForwardSpec} of a model and (optionally) its LoRA settings. */
export function forwardSpec(
  cfg: ModelConfig,
  lora: { alpha: number; rank: number } | null,
): ForwardSpec {
  return {
    nHeads: cfg.nHeads,
    loraScale: lora ? lora.alpha / lora.rank : 0,
    rope: cfg.positions === "rope" ? cfg.ropeTheta : 0,
    window: cfg.attentionWindow ?? 0,
  };
}

/**
 * Attention of one layer over heads-split `q [B, T, H, hd]`, `k`/`v [B, S, H, hd]`,
 * returning `[B, T, H, hd]`. The default is plain causal attention; the sampler plugs in a
 * KV-cache version that writes `k`/`v` into its cache and attends over it.
 */
export type AttentionFn = (layer: number, q: np.Array, k: np.Array, v: np.Array) => np.Array;

/** Causal self-attention over the sequence itself (training and scoring). */
export const causalAttention: AttentionFn = (_layer, q, k, v) =>
  nn.dotProductAttention(q, k, v, { isCausal: true });

/** Options of {@link gptForward} beyond the plain causal forward. */
export interface ForwardHooks {
  /** Positions `[B, T]` int32; default `0..T-1` for every row. */
  positions?: np.Array;
  /** Attention implementation; default {@link causalAttention}. */
  attend?: AttentionFn;
}

/**
 * Logits `[B, T, V]` of `tokens [B, T]` (int32), positions `0..T-1`.
 *
 * `lora` may be `null` or `{}` for the bare model; inside `jit`/`grad` use `{}` (a pytree)
 * rather than `null`. Only the linears whose `lora_a`/`lora_b` are present get an adapter.
 *
 * @example
 * const logits = gptLogits(tree.ref(base), tree.ref(lora), tokens, forwardSpec(cfg, spec));
 */
export function gptLogits(
  base: ParamTree,
  lora: ParamTree | null,
  tokens: np.Array,
  spec: ForwardSpec,
): np.Array {
  return gptForward(base, lora, tokens, spec);
}

/**
 * The forward pass with hooks for incremental decoding: explicit positions and a custom
 * attention (see {@link AttentionFn}). Returns logits `[B, T, V]`.
 */
export function gptForward(
  base: ParamTree,
  lora: ParamTree | null,
  tokens: np.Array,
  spec: ForwardSpec,
  hooks: ForwardHooks = {},
): np.Array {
  if (spec.rope && (hooks.attend || hooks.positions)) {
    throw new Error(
      "gpt: a rotary model decodes on the ONNX sampler only (TINKERBENCH_SAMPLER_ENGINE=onnx)",
    );
  }
  const stages = splitStages(base, lora ?? {});
  let x = embedTokens(stages.embed.base, tokens, hooks.positions);
  stages.blocks.forEach((b, i) => {
    x = blockForward(b.base, b.lora, x, spec, i, hooks.attend);
  });
  return headLogits(stages.head.base, stages.head.lora, x, spec);
}

/** The weights of one stage of the model: base (and adapter) tensors under stage-local names. */
export interface StageParams {
  base: ParamTree;
  lora: ParamTree;
}

/**
 * A model's weights cut into its stages, each under stage-local names so that every block has
 * the same pytree (one jitted program serves all of them): `embed` (`wte.weight`,
 * `wpe.weight`), `blocks[i]` (`ln1.weight`, `attn.q.weight`, `attn.q.lora_a`, …) and `head`
 * (`ln_f.*`, `lm_head.*`).
 */
export function splitStages(
  base: ParamTree,
  lora: ParamTree,
): { embed: StageParams; blocks: StageParams[]; head: StageParams } {
  const pick = (t: ParamTree, keep: (k: string) => string | null): ParamTree => {
    const out: ParamTree = {};
    for (const [k, v] of Object.entries(t)) {
      const local = keep(k);
      if (local !== null) out[local] = v;
    }
    return out;
  };
  const stage = (keep: (k: string) => string | null): StageParams => ({
    base: pick(base, keep),
    lora: pick(lora, keep),
  });
  const blocks: StageParams[] = [];
  const layers = 1 + Math.max(
    -1,
    ...[...Object.keys(base), ...Object.keys(lora)].map((k) =>
      Number(/^blocks\.(\d+)\./.exec(k)?.[1] ?? -1)
    ),
  );
  for (let i = 0; i < layers; i++) {
    const prefix = `blocks.${i}.`;
    blocks.push(stage((k) => k.startsWith(prefix) ? k.slice(prefix.length) : null));
  }
  const top = (names: string[]) => (k: string) =>
    names.some((n) => k.startsWith(`${n}.`)) ? k : null;
  return { embed: stage(top(["wte", "wpe"])), blocks, head: stage(top(["ln_f", "lm_head"])) };
}

/**
 * Token plus position embeddings `[B, T, D]` from the `embed` stage's weights (a rotary model
 * has no position table: its positions enter in attention). Lookups are one-hot matmuls rather
 * than gathers so that the full fine-tuning gradient jits (see {@link pick}); they are exact.
 */
export function embedTokens(p: ParamTree, tokens: np.Array, positions?: np.Array): np.Array {
  const wte = p["wte.weight"], wpe = p["wpe.weight"];
  if (!wte) throw new Error("gpt: missing embedding parameters");
  const tok = np.matmul(nn.oneHot(tokens, wte.shape[0]), wte);
  if (!wpe) return tok;
  if (positions) return tok.add(np.matmul(nn.oneHot(positions, wpe.shape[0]), wpe));
  return tok.add(wpe.slice([0, tok.shape[1]]));
}

/**
 * One pre-LN block on `x [B, T, D]` with its stage weights (block-local names), `layer` its
 * index (for the attention hook): `x + attn(ln1(x))`, then `+ mlp(ln2(·))`.
 */
export function blockForward(
  base: ParamTree,
  lora: ParamTree,
  x: np.Array,
  spec: ForwardSpec,
  layer: number,
  attend: AttentionFn = causalAttention,
): np.Array {
  const p = new Layers(base, lora, spec.loraScale);
  x = x.ref.add(attention(p, layer, layerNorm(p, "ln1", x), spec, attend));
  return x.ref.add(mlp(p, layerNorm(p, "ln2", x)));
}

/** Logits `[B, T, V]` of the final hidden states: `ln_f(x) @ lm_head` (head stage weights). */
export function headLogits(
  base: ParamTree,
  lora: ParamTree,
  x: np.Array,
  spec: ForwardSpec,
): np.Array {
  const p = new Layers(base, lora, spec.loraScale);
  return p.linear("lm_head", layerNorm(p, "ln_f", x));
}

/**
 * Log-probabilities of `targets` under `logits [B, T, V]`: `targets [B, T]` gives `[B, T]`,
 * `targets [B, T, K]` gives `[B, T, K]`. A log-softmax over the vocabulary (max-shifted,
 * so it is stable for large logits) gathered at the targets; differentiable in `logits`.
 */
export function targetLogprobs(logits: np.Array, targets: np.Array): np.Array {
  const perK = targets.ndim === logits.ndim; // [B, T, K] targets
  const logp = nn.logSoftmax(logits, -1);
  const vocab = np.arange(logp.shape[logp.ndim - 1], undefined, undefined, { dtype: np.int32 });
  const isTarget = np.equal(np.expandDims(targets, -1), vocab); // [B, T, (K,) V]
  return pick(perK ? np.expandDims(logp, -2) : logp, isTarget);
}

/**
 * `Σ_v where(mask, x, 0)` over the last axis: a gather written as a masked sum, because
 * jax-js 0.1.25 cannot `jit` the gradient of a gather (its scatter "input is not imm").
 * Exact: the sum adds one value to zeros.
 */
function pick(x: np.Array, mask: np.Array): np.Array {
  return np.where(mask, x, 0).sum(-1);
}

/** LayerNorm over the last axis (biased variance, eps 1e-5), as torch.nn.LayerNorm. */
function layerNorm(p: Layers, path: string, x: np.Array): np.Array {
  const centered = x.ref.sub(x.mean(-1, { keepdims: true }));
  const variance = np.square(centered.ref).mean(-1, { keepdims: true });
  const normed = centered.div(np.sqrt(variance.add(1e-5)));
  return normed.mul(p.take(`${path}.weight`)).add(p.take(`${path}.bias`));
}

/** A block's multi-head self-attention on the normalised input `x [B, T, D]`. */
function attention(
  p: Layers,
  layer: number,
  x: np.Array,
  spec: ForwardSpec,
  attend: AttentionFn,
): np.Array {
  const [b, t, d] = x.shape;
  const heads = (y: np.Array) => y.reshape([b, t, spec.nHeads, d / spec.nHeads]);
  const rotate = (y: np.Array) => spec.rope ? applyRope(y, spec.rope) : y;
  const q = rotate(heads(p.linear("attn.q", x.ref)));
  const k = rotate(heads(p.linear("attn.k", x.ref)));
  const v = heads(p.linear("attn.v", x));
  const y = (spec.window ? windowedAttention(q, k, v, spec.window) : attend(layer, q, k, v))
    .reshape([b, t, d]);
  return p.linear("attn.o", y);
}

/** A block's MLP: fc → GELU (tanh approximation) → proj. */
function mlp(p: Layers, x: np.Array): np.Array {
  const h = nn.gelu(p.linear("mlp.fc", x), { approximate: true });
  return p.linear("mlp.proj", h);
}

/**
 * Parameter access for one forward pass. Each parameter is taken (consumed) exactly once,
 * which is what jax-js's ownership rules require of a function that consumes its trees.
 */
class Layers {
  constructor(
    private readonly base: ParamTree,
    private readonly lora: ParamTree,
    private readonly loraScale: number,
  ) {}

  /** The base parameter `name`; throws if absent so a wrong tree fails loudly. */
  take(name: string): np.Array {
    const w = this.base[name];
    if (!w) throw new Error(`gpt: missing base parameter ${name}`);
    return w;
  }

  /** `x @ W (+ b) (+ scale · (x @ A) @ B)` for the linear at `path`. */
  linear(path: string, x: np.Array): np.Array {
    const a = this.lora[`${path}.lora_a`];
    const b = this.lora[`${path}.lora_b`];
    if (!a !== !b) throw new Error(`gpt: LoRA adapter ${path} needs both lora_a and lora_b`);
    let y = np.matmul(a ? x.ref : x, this.take(`${path}.weight`));
    const bias = this.base[`${path}.bias`];
    if (bias) y = y.add(bias);
    if (a) y = y.add(np.matmul(np.matmul(x, a), b).mul(this.loraScale));
    return y;
  }
}
