/**
 * The learner's step as one ONNX graph: the local GPT's forward, a loss (`../train/losses.ts`)
 * and, written out by hand, the backward pass down to every trained tensor. ONNX Runtime runs
 * it as an inference graph; the weights are graph inputs, so new weights never rebuild a
 * session, and Adam runs on the host (`../train/adam.ts`).
 *
 * Inputs (B rows of T tokens, N = B·T; K target columns of top-K cross-entropy):
 * - `tokens [B, T]`, `targets [B, T]` or `[B, T, K]` (int64); `weights` as `targets` (float);
 *   RL losses: `sampler_logprobs`, `advantages [B, T]`; the loss's config scalars `config.<key> []`
 * - every base weight under its name (`../model/params.ts`) and every adapter tensor
 *   (`<path>.lora_a`, `<path>.lora_b`) of a LoRA learner
 *
 * Outputs: `logprobs` (the targets' shape), `sums [1 + stats]` (the loss, then the loss's
 * statistics) and, in a training graph, `grad.<name>` for every trained tensor.
 *
 * Layout: the residual stream is `[N, D]`, so every linear is one 2-D Gemm in both directions;
 * attention works on `[B, H, T, hd]` (`train_attention.ts`).
 *
 * @module
 */

import type { ModelConfig } from "../model/config.ts";
import { baseParameterShapes } from "../model/params.ts";
import { LOSSES, type LossFnName, type LossTokens } from "../train/losses.ts";
import type { Trainable } from "../train/types.ts";
import { type Dim, GraphBuilder } from "./graph.ts";
import { GPT_OPSET } from "./gpt_graph.ts";
import { causalAttention, ropeForward } from "./train_attention.ts";

/** What shapes a training graph; one session per distinct spec. */
export interface TrainGraphSpec {
  config: ModelConfig;
  trainable: Trainable;
  /** A LoRA learner's adapters: their `[in, r]`/`[r, out]` sizes by path, and the scale. */
  lora?: { scale: number; adapters: Record<string, { inF: number; rank: number; outF: number }> };
  loss: LossFnName;
  /** `[B, T, K]` targets (top-K cross-entropy). */
  topK: boolean;
  /** `forward`: log-probs and the loss's sums only, no gradients. */
  mode: "train" | "forward";
}

/**
 * Fold an adapter into its weight when that is cheaper to train. Per token, an unfolded adapter
 * on an `[in, out]` linear costs about `6·r·(in + out)` flops over forward and backward;
 * folded, `W' = W + s·A·B` costs the weight gradient `2·in·out` of `W'` (then tiny
 * `dA = s·dW'·Bᵀ`, `dB = s·Aᵀ·dW'`). So fold when `in·out / (in + out) < 3r`.
 */
export function foldWhenCheaper(inF: number, rank: number, outF: number): boolean {
  return (inF * outF) / (inF + outF) < 3 * rank;
}

/** The names of the trained tensors of a spec, in the graph's output order (`grad.<name>`). */
export function trainedNames(spec: TrainGraphSpec): string[] {
  if (spec.trainable === "full") return [...baseParameterShapes(spec.config).keys()];
  return Object.keys(spec.lora?.adapters ?? {}).flatMap((p) => [`${p}.lora_a`, `${p}.lora_b`]);
}

/** Serialises the training (or forward) graph of `spec` as an ONNX model. */
export function buildTrainGraph(spec: TrainGraphSpec): Uint8Array {
  const cfg = spec.config;
  const g = new GraphBuilder();
  const d = cfg.dModel, h = cfg.nHeads, hd = d / h;
  const full = spec.trainable === "full", train = spec.mode === "train";
  const shapes = baseParameterShapes(cfg);
  const w = (name: string) => g.input(name, "float", shapes.get(name)!);
  const weights = new Map([...shapes.keys()].map((n) => [n, w(n)]));
  const param = (name: string) => weights.get(name)!;
  const tokens = g.input("tokens", "int64", ["batch", "seq"]);
  const tDims: Dim[] = spec.topK ? ["batch", "seq", "k"] : ["batch", "seq"];
  const targets = g.input("targets", "int64", tDims);
  const perToken = (x: string) => g.op("Flatten", [x], { axis: { i: 2 } }); // [N, K]
  const rl = spec.loss !== "cross_entropy";
  const lossTokens: Omit<LossTokens, "lp"> = {
    weights: perToken(g.input("weights", "float", tDims)),
    ...(rl
      ? {
        logprobs: perToken(g.input("sampler_logprobs", "float", ["batch", "seq"])),
        advantages: perToken(g.input("advantages", "float", ["batch", "seq"])),
      }
      : {}),
  };
  const lossConfig = Object.fromEntries(
    Object.keys(LOSSES[spec.loss].config).map((k) => [k, g.input(`config.${k}`, "float", [])]),
  );
  const grad = (name: string, value: string) =>
    g.output(value, `grad.${name}`, "float", shapeOf(name));
  const shapeOf = (name: string): number[] => {
    const base = shapes.get(name);
    if (base) return base;
    const path = name.replace(/\.lora_[ab]$/, ""), a = spec.lora!.adapters[path];
    return name.endsWith(".lora_a") ? [a.inF, a.rank] : [a.rank, a.outF];
  };
  const ops = new Ops(g);

  /** A linear `x [N, in] → [N, out]` (with its adapter, if any) and its backward. */
  const linear = (path: string, x: string, bias = true) => {
    const b = bias ? param(`${path}.bias`) : undefined;
    const a = spec.lora?.adapters[path];
    const scale = spec.lora?.scale ?? 0;
    const la = a ? g.input(`${path}.lora_a`, "float", [a.inF, a.rank]) : "";
    const lb = a ? g.input(`${path}.lora_b`, "float", [a.rank, a.outF]) : "";
    const fold = a !== undefined && foldWhenCheaper(a.inF, a.rank, a.outF);
    const weight = fold
      ? g.op("Gemm", [la, lb, param(`${path}.weight`)], { alpha: { f: scale } })
      : param(`${path}.weight`);
    let y = ops.gemm(x, weight, b);
    const u = a && !fold ? g.op("MatMul", [x, la]) : "";
    if (u) y = g.op("Add", [y, g.op("Gemm", [u, lb], { alpha: { f: scale } })]);
    return {
      y,
      /** Emits the weights' gradients; returns `dx` when `needDx`. */
      backward(dy: string, needDx: boolean): string | undefined {
        if (full) {
          grad(`${path}.weight`, ops.gemm(x, dy, undefined, { transA: 1 }));
          if (b) grad(`${path}.bias`, g.op("ReduceSum", [dy, g.ints([0])], { keepdims: { i: 0 } }));
        }
        let du = "";
        if (a && fold) {
          const dw = ops.gemm(x, dy, undefined, { transA: 1 });
          grad(`${path}.lora_a`, g.op("Gemm", [dw, lb], { alpha: { f: scale }, transB: { i: 1 } }));
          grad(`${path}.lora_b`, g.op("Gemm", [la, dw], { alpha: { f: scale }, transA: { i: 1 } }));
        } else if (a) {
          grad(`${path}.lora_b`, g.op("Gemm", [u, dy], { alpha: { f: scale }, transA: { i: 1 } }));
          du = g.op("Gemm", [dy, lb], { alpha: { f: scale }, transB: { i: 1 } });
          grad(`${path}.lora_a`, ops.gemm(x, du, undefined, { transA: 1 }));
        }
        if (!needDx) return undefined;
        const dx = ops.gemm(dy, weight, undefined, { transB: 1 });
        return du ? g.op("Add", [dx, ops.gemm(du, la, undefined, { transB: 1 })]) : dx;
      },
    };
  };

  /** LayerNorm over `x [N, D]` and its backward. */
  const layerNorm = (path: string, x: string) => {
    const gamma = param(`${path}.weight`);
    const [y, mean, inv] = g.opN("LayerNormalization", [x, gamma, param(`${path}.bias`)], 3, {
      axis: { i: -1 },
      epsilon: { f: 1e-5 },
    });
    return {
      y,
      backward(dy: string): string {
        const xhat = g.op("Mul", [g.op("Sub", [x, mean]), inv]);
        if (full) {
          const colSum = (z: string) => g.op("ReduceSum", [z, g.ints([0])], { keepdims: { i: 0 } });
          grad(`${path}.weight`, colSum(g.op("Mul", [dy, xhat])));
          grad(`${path}.bias`, colSum(dy));
        }
        const dxhat = g.op("Mul", [dy, gamma]);
        const rowMean = (z: string) =>
          g.op("ReduceMean", [z], { axes: { ints: [-1] }, keepdims: { i: 1 } });
        const centered = g.op("Sub", [
          g.op("Sub", [dxhat, rowMean(dxhat)]),
          g.op("Mul", [xhat, rowMean(g.op("Mul", [dxhat, xhat]))]),
        ]);
        return g.op("Mul", [centered, inv]);
      },
    };
  };

  // Shapes of the stream's views.
  const bt = g.op("Shape", [tokens]);
  const headsShape = g.op("Concat", [bt, g.ints([h, hd])], { axis: { i: 0 } });
  const toHeads = (x: string) =>
    g.op("Transpose", [g.op("Reshape", [x, headsShape])], { perm: { ints: [0, 2, 1, 3] } });
  const fromHeads = (x: string) =>
    g.op("Reshape", [g.op("Transpose", [x], { perm: { ints: [0, 2, 1, 3] } }), g.ints([-1, d])]);
  const rope = cfg.positions === "rope";
  const positions = rope
    ? g.op("Unsqueeze", [
      g.op("Range", [
        g.constant([], BigInt64Array.of(0n)),
        g.op("Gather", [bt, g.constant([], BigInt64Array.of(1n))], { axis: { i: 0 } }),
        g.constant([], BigInt64Array.of(1n)),
      ]),
      g.ints([0]),
    ])
    : "";

  // Embedding: [B, T, D] (+ positions), then the [N, D] stream.
  const embedded = g.op("Gather", [param("wte.weight"), tokens], { axis: { i: 0 } });
  const seqLen = g.op("Slice", [bt, g.ints([1]), g.ints([2])]); // [1]
  const withPositions = rope ? embedded : g.op("Add", [
    embedded,
    g.op("Slice", [param("wpe.weight"), g.ints([0]), seqLen, g.ints([0])]),
  ]);
  let x = g.op("Reshape", [withPositions, g.ints([-1, d])]);

  const blocks = [];
  for (let l = 0; l < cfg.nLayers; l++) {
    const p = `blocks.${l}`;
    const ln1 = layerNorm(`${p}.ln1`, x);
    const q = linear(`${p}.attn.q`, ln1.y), k = linear(`${p}.attn.k`, ln1.y);
    const v = linear(`${p}.attn.v`, ln1.y);
    const rq = rope ? ropeForward(g, cfg, toHeads(q.y), positions) : null;
    const rk = rope ? ropeForward(g, cfg, toHeads(k.y), positions) : null;
    const attn = causalAttention(g, rq?.y ?? toHeads(q.y), rk?.y ?? toHeads(k.y), toHeads(v.y), {
      window: cfg.attentionWindow,
      tokens,
    });
    const o = linear(`${p}.attn.o`, fromHeads(attn.y));
    const x1 = g.op("Add", [x, o.y]);
    const ln2 = layerNorm(`${p}.ln2`, x1);
    const fc = linear(`${p}.mlp.fc`, ln2.y);
    const act = ops.gelu(fc.y);
    const proj = linear(`${p}.mlp.proj`, act.y);
    x = g.op("Add", [x1, proj.y]);
    blocks.push({ ln1, q, k, v, rq, rk, attn, o, ln2, fc, act, proj });
  }
  const lnF = layerNorm("ln_f", x);
  const head = linear("lm_head", lnF.y, false);
  const logp = g.op("LogSoftmax", [head.y], { axis: { i: -1 } }); // [N, V]
  const index = perToken(targets);
  const lp = g.op("GatherElements", [logp, index], { axis: { i: 1 } }); // [N, K]
  g.output(g.op("Reshape", [lp, g.op("Shape", [targets])]), "logprobs", "float", tDims);
  const terms = LOSSES[spec.loss].graph(g, { ...lossTokens, lp }, lossConfig);
  const sums = [terms.loss, ...LOSSES[spec.loss].stats.map((s) => terms.stats[s])];
  g.output(
    g.op("Concat", sums.map((s) => g.op("Unsqueeze", [s, g.ints([0])])), { axis: { i: 0 } }),
    "sums",
    "float",
    [sums.length],
  );
  if (!train) return g.toModel({ opset: GPT_OPSET });

  // Backward. d logits = scatter(dlp) − softmax · Σ_k dlp.
  const total = g.op("ReduceSum", [terms.dlp, g.ints([1])], { keepdims: { i: 1 } });
  const spread = g.op("Neg", [g.op("Mul", [g.op("Exp", [logp]), total])]);
  const dlogits = g.op("ScatterElements", [spread, index, terms.dlp], {
    axis: { i: 1 },
    reduction: { s: "add" },
  });
  let dx = lnF.backward(head.backward(dlogits, true)!);
  for (let l = cfg.nLayers - 1; l >= 0; l--) {
    const b = blocks[l];
    const needDx = full || l > 0;
    const dAct = b.act.backward(b.proj.backward(dx, true)!);
    const dx1 = g.op("Add", [dx, b.ln2.backward(b.fc.backward(dAct, true)!)]);
    const { dq, dk, dv } = b.attn.backward(toHeads(b.o.backward(dx1, true)!));
    const dqs = fromHeads(b.rq ? b.rq.backward(dq) : dq);
    const dks = fromHeads(b.rk ? b.rk.backward(dk) : dk);
    const parts = [
      b.q.backward(dqs, needDx),
      b.k.backward(dks, needDx),
      b.v.backward(fromHeads(dv), needDx),
    ];
    dx = needDx ? g.op("Add", [dx1, b.ln1.backward(g.op("Sum", parts as string[]))]) : "";
  }
  if (full) embeddingBackward(g, cfg, tokens, dx, grad);
  return g.toModel({ opset: GPT_OPSET });
}

/**
 * The embedding tables' gradients from `dx [N, D]`: the token table's as a scatter-add of the
 * rows (`ScatterND`, reduction add), the position table's as `dx` summed over rows, zero past T.
 */
function embeddingBackward(
  g: GraphBuilder,
  cfg: ModelConfig,
  tokens: string,
  dx: string,
  grad: (name: string, value: string) => void,
): void {
  const d = cfg.dModel;
  const zeros = g.op("ConstantOfShape", [g.ints([cfg.vocabSize, d])]);
  const rows = g.op("Reshape", [tokens, g.ints([-1, 1])]);
  grad("wte.weight", g.op("ScatterND", [zeros, rows, dx], { reduction: { s: "add" } }));
  if (cfg.positions === "rope") return;
  const bt = g.op("Shape", [tokens]);
  const perRow = g.op("Reshape", [dx, g.op("Concat", [bt, g.ints([d])], { axis: { i: 0 } })]);
  const summed = g.op("ReduceSum", [perRow, g.ints([0])], { keepdims: { i: 0 } }); // [T, D]
  const rest = g.op("Sub", [
    g.ints([cfg.maxSeqLen]),
    g.op("Slice", [bt, g.ints([1]), g.ints([2])]),
  ]);
  const pads = g.op("Concat", [g.ints([0, 0]), rest, g.ints([0])], { axis: { i: 0 } });
  grad("wpe.weight", g.op("Pad", [summed, pads]));
}

/** Ops the graph uses more than once. */
class Ops {
  constructor(private readonly g: GraphBuilder) {}

  /** `x·W (+ b)` on 2-D operands, with Gemm's transposes. */
  gemm(x: string, w: string, b?: string, t: { transA?: number; transB?: number } = {}): string {
    const attrs = {
      ...(t.transA ? { transA: { i: 1 } } : {}),
      ...(t.transB ? { transB: { i: 1 } } : {}),
    };
    return this.g.op("Gemm", b ? [x, w, b] : [x, w], attrs);
  }

  /**
   * GELU, tanh approximation (as the sampler's graph): `y = ½m·(1 + t)` with
   * `t = tanh(c·(m + k·m³))`, `k = 0.044715`, and its derivative
   * `½(1 + t) + ½m·(1 − t²)·(c + 3·c·k·m²)`, in few elementwise passes.
   */
  gelu(m: string): { y: string; backward(dy: string): string } {
    const g = this.g, c = Math.sqrt(2 / Math.PI), k = 0.044715;
    const m2 = g.op("Mul", [m, m]);
    // c·(m + k·m³), rounded as the sampler's graph and jax-js round it.
    const cube = g.op("Mul", [m2, m]);
    const u = g.op("Mul", [g.op("Add", [m, g.op("Mul", [cube, g.scalar(k)])]), g.scalar(c)]);
    const t = g.op("Tanh", [u]);
    const onePlus = g.op("Add", [t, g.scalar(1)]);
    const half = g.op("Mul", [m, g.scalar(0.5)]);
    const y = g.op("Mul", [half, onePlus]);
    return {
      y,
      backward(dy: string): string {
        const du = g.op("Add", [g.op("Mul", [m2, g.scalar(3 * c * k)]), g.scalar(c)]);
        const sech2 = g.op("Sub", [g.scalar(1), g.op("Mul", [t, t])]);
        const slope = g.op("Mul", [g.op("Mul", [half, sech2]), du]);
        const dydm = g.op("Add", [g.op("Mul", [onePlus, g.scalar(0.5)]), slope]);
        return g.op("Mul", [dy, dydm]);
      },
    };
  }
}
