/**
 * The local GPT (`../model/gpt.ts`) as one ONNX graph that serves prefill, prefix extension
 * and KV-cache decoding alike: it runs `T` new tokens per row over `S` cached slots.
 *
 * Inputs (B rows, T new tokens, S past slots, K head positions):
 * - `input_ids [B, T]`, `position_ids [B, T]` (int64)
 * - `key_bias [B, S + T]` (float): 0 for a key slot the row may attend to, {@link MASKED}
 *   for one it must not (past slots the row has not written, padding); causality among the
 *   new tokens is added inside the graph
 * - `head_index [B, K]` (int64): which of the T positions go through the LM head
 * - `past.{l}.key [B, H, hd, S]` (keys stored transposed, as the score matmul reads them) and
 *   `past.{l}.value [B, H, S, hd]` per layer
 * - windowed models only: `key_positions [B, S]` (int64), the position each past slot holds
 *   (their cache is a ring; `rope_graph.ts`). Rotary models rotate q and k by `position_ids`.
 *
 * Outputs: `logprobs [B, K, V]` (log-softmax of the raw logits) and the new tokens' keys and
 * values `new.{l}.key [B, H, hd, T]`, `new.{l}.value [B, H, T, hd]`; the caller writes those
 * into its own cache, so no run copies the whole cache in or out.
 *
 * The `prefill` layout (windowed models) runs a chunk of a long prompt at a cost linear in its
 * length: `input_ids`, `position_ids [B, T]`, `head_index [B, K]`, and the `W` positions
 * before the chunk, `past_bias [B, W]` (0 or {@link MASKED}), `past.{l}.key [B, H, hd, W]`,
 * `past.{l}.value [B, H, W, hd]`, in order of position; out `logprobs [B, K, V]` and the keys
 * and values of past and chunk together, `new.{l}.key [B, H, hd, W + T]`, `new.{l}.value
 * [B, H, W + T, hd]`, from which the host keeps the next chunk's past and the ring's window.
 *
 * The weights are initializers (constant-folded and pre-packed by ONNX Runtime) or, with
 * `weightsAsInputs`, graph inputs named as the parameters (one session serves every version).
 *
 * @module
 */

import type { ModelConfig } from "../model/config.ts";
import { baseParameterShapes } from "../model/params.ts";
import type { NamedTensors } from "../tensors.ts";
import { type Dim, GraphBuilder } from "./graph.ts";
import { ropeAngles, rotate, windowBias } from "./rope_graph.ts";
import { MASKED } from "./mask.ts";
import { slidingWindowAttention } from "./train_attention.ts";

/** The opset the graph is written for (LayerNormalization needs 17). */
export const GPT_OPSET = 17;

/** Options of {@link buildGptGraph}. */
export interface GptGraphOptions {
  /** Weights (base names, LoRA folded in); required unless `weightsAsInputs`. */
  weights?: NamedTensors;
  /** Declare the weights as graph inputs instead of storing them. */
  weightsAsInputs?: boolean;
  /**
   * `sampler` (default): the interface above. `transformers`: the interface of Hugging Face's
   * ONNX exports of decoder LMs, which transformers.js runs: `input_ids`, `attention_mask
   * [B, S + T]` (1 = attend), `position_ids`, `past_key_values.{l}.key|value [B, H, S, hd]` in;
   * `logits [B, T, V]` and `present.{l}.key|value [B, H, S + T, hd]` (the whole cache) out.
   * `prefill` (windowed models): a chunk of a long prompt in blocked sliding-window attention
   * (`train_attention.ts`), as the module doc says.
   */
  layout?: "sampler" | "transformers" | "prefill";
}

/** Serialises the GPT of `cfg` as an ONNX model (see the module doc for its interface). */
export function buildGptGraph(cfg: ModelConfig, opts: GptGraphOptions): Uint8Array {
  const g = new GraphBuilder();
  const h = cfg.nHeads, hd = cfg.dModel / cfg.nHeads, d = cfg.dModel;
  const shapes = baseParameterShapes(cfg);
  const w = (name: string): string => {
    const shape = shapes.get(name);
    if (!shape) throw new Error(`gpt graph: unknown parameter ${name}`);
    if (opts.weightsAsInputs) return g.input(name, "float", shape);
    const t = opts.weights?.get(name);
    if (!t) throw new Error(`gpt graph: missing weight ${name}`);
    return g.constant(t.shape, t.data, name);
  };
  const hf = opts.layout === "transformers";
  const prefill = opts.layout === "prefill";
  if (prefill && !cfg.attentionWindow) throw new Error("gpt graph: prefill is for windowed models");
  const ids = g.input("input_ids", "int64", ["batch", "new"]);
  const keyBias = hf
    ? g.op("Where", [
      g.op("Equal", [
        g.input("attention_mask", "int64", ["batch", "slots_and_new"]),
        g.constant([], BigInt64Array.of(0n)),
      ]),
      g.scalar(MASKED),
      g.scalar(0),
    ])
    : prefill
    ? ""
    : g.input("key_bias", "float", ["batch", "slots_and_new"]);
  const positions = g.input("position_ids", "int64", ["batch", "new"]);
  const headIndex = hf ? "" : g.input("head_index", "int64", ["batch", "heads"]);
  const pastBias = prefill ? g.input("past_bias", "float", ["batch", cfg.attentionWindow!]) : "";
  const past = Array.from({ length: cfg.nLayers }, (_, l) => ({
    k: hf
      ? g.input(`past_key_values.${l}.key`, "float", ["batch", h, "slots", hd])
      : g.input(`past.${l}.key`, "float", ["batch", h, hd, "slots"]),
    v: g.input(hf ? `past_key_values.${l}.value` : `past.${l}.value`, "float", [
      "batch",
      h,
      "slots",
      hd,
    ]),
  }));

  const bias = prefill ? { add: "", split: "" } : attentionBias(g, ids, past[0].v, keyBias);
  const rope = cfg.positions === "rope";
  if (rope && hf) throw new Error("gpt graph: a rotary model has no transformers.js layout");
  if (cfg.attentionWindow && !prefill) {
    const keyPositions = g.input("key_positions", "int64", ["batch", "slots"]);
    bias.add = g.op("Add", [bias.add, windowBias(g, cfg.attentionWindow, keyPositions, positions)]);
  }
  const angles = rope ? ropeAngles(g, cfg, positions) : null;
  const tokens = g.op("Gather", [w("wte.weight"), ids], { axis: { i: 0 } });
  let x = rope
    ? tokens
    : g.op("Add", [tokens, g.op("Gather", [w("wpe.weight"), positions], { axis: { i: 0 } })]);
  const linear = (path: string, y: string, bias = true) => {
    const out = g.op("MatMul", [y, w(`${path}.weight`)]);
    return bias ? g.op("Add", [out, w(`${path}.bias`)]) : out;
  };
  const norm = (path: string, y: string) =>
    g.op("LayerNormalization", [y, w(`${path}.weight`), w(`${path}.bias`)], {
      axis: { i: -1 },
      epsilon: { f: 1e-5 },
    });
  const splitHeads = (y: string) =>
    g.op("Transpose", [g.op("Reshape", [y, g.ints([0, 0, h, hd])])], {
      perm: { ints: [0, 2, 1, 3] },
    });
  const scale = g.scalar(1 / Math.sqrt(hd));
  const dims: Dim[] = ["batch", h, "new", hd];
  const keyDims: Dim[] = ["batch", h, hd, "new"];
  const pick = (y: string) =>
    g.op("GatherND", [y, g.op("Unsqueeze", [headIndex, g.ints([2])])], { batch_dims: { i: 1 } });
  for (let l = 0; l < cfg.nLayers; l++) {
    const p = `blocks.${l}`;
    const a = norm(`${p}.ln1`, x);
    const turn = (y: string) => angles ? rotate(g, cfg, y, angles) : y;
    const k = turn(splitHeads(linear(`${p}.attn.k`, a)));
    const v = splitHeads(linear(`${p}.attn.v`, a));
    let attended: string;
    if (prefill && l === cfg.nLayers - 1) {
      // The last layer's output is read at the head positions only: every position's keys and
      // values go to the cache, the rest of the layer runs at the heads alone.
      const headAngles = ropeAngles(
        g,
        cfg,
        g.op("GatherElements", [positions, headIndex], { axis: { i: 1 } }),
      );
      const q = rotate(g, cfg, splitHeads(linear(`${p}.attn.q`, pick(a))), headAngles);
      attended = headAttention(q, prefillKeys(l, k, v));
      x = pick(x);
    } else {
      const q = turn(splitHeads(linear(`${p}.attn.q`, a)));
      attended = hf
        ? hfAttention(l, q, k, v)
        : prefill
        ? prefillAttention(l, q, k, v)
        : samplerAttention(l, q, k, v);
    }
    const merged = g.op("Reshape", [
      g.op("Transpose", [attended], { perm: { ints: [0, 2, 1, 3] } }),
      g.ints([0, 0, d]),
    ]);
    x = g.op("Add", [x, linear(`${p}.attn.o`, merged)]);
    const m = linear(`${p}.mlp.fc`, norm(`${p}.ln2`, x));
    x = g.op("Add", [x, linear(`${p}.mlp.proj`, gelu(g, m))]);
  }
  if (hf) {
    const logits = linear("lm_head", norm("ln_f", x), false);
    g.output(logits, "logits", "float", ["batch", "new", cfg.vocabSize]);
    return g.toModel({ opset: GPT_OPSET });
  }
  const logits = linear("lm_head", norm("ln_f", prefill ? x : pick(x)), false);
  g.output(g.op("LogSoftmax", [logits], { axis: { i: -1 } }), "logprobs", "float", [
    "batch",
    "heads",
    cfg.vocabSize,
  ]);
  return g.toModel({ opset: GPT_OPSET });

  /** transformers.js feeds the whole cache back: concatenate and attend over it. */
  function hfAttention(l: number, q: string, k: string, v: string): string {
    const keys = g.op("Concat", [past[l].k, k], { axis: { i: 2 } });
    const values = g.op("Concat", [past[l].v, v], { axis: { i: 2 } });
    g.output(keys, `present.${l}.key`, "float", ["batch", h, "slots_and_new", hd]);
    g.output(values, `present.${l}.value`, "float", ["batch", h, "slots_and_new", hd]);
    const scores = g.op("Add", [
      g.op("Mul", [
        g.op("MatMul", [q, g.op("Transpose", [keys], { perm: { ints: [0, 1, 3, 2] } })]),
        scale,
      ]),
      bias.add,
    ]);
    return g.op("MatMul", [g.op("Softmax", [scores], { axis: { i: -1 } }), values]);
  }

  /**
   * The prefill layout's keys and values of past and chunk, `[B, H, W + T, hd]` in order of
   * position, also output for the host (keys transposed, as its cache holds them).
   */
  function prefillKeys(l: number, k: string, v: string): { keys: string; values: string } {
    const pastKeys = g.op("Transpose", [past[l].k], { perm: { ints: [0, 1, 3, 2] } });
    const keys = g.op("Concat", [pastKeys, k], { axis: { i: 2 } });
    g.output(
      g.op("Transpose", [keys], { perm: { ints: [0, 1, 3, 2] } }),
      `new.${l}.key`,
      "float",
      ["batch", h, hd, "window_and_new"],
    );
    const values = g.op("Concat", [past[l].v, v], { axis: { i: 2 } });
    g.output(values, `new.${l}.value`, "float", ["batch", h, "window_and_new", hd]);
    return { keys, values };
  }

  /** The prefill layout's attention: blocked over the chunk, after the window before it. */
  function prefillAttention(l: number, q: string, k: string, v: string): string {
    prefillKeys(l, k, v);
    return slidingWindowAttention(g, q, k, v, {
      window: cfg.attentionWindow!,
      tokens: ids,
      past: {
        keys: g.op("Transpose", [past[l].k], { perm: { ints: [0, 1, 3, 2] } }),
        values: past[l].v,
        bias: pastBias,
      },
    });
  }

  /**
   * Attention of the head positions' queries `q [B, H, K, hd]` over the `W` keys each sees
   * (positions `p − W + 1 .. p`, gathered from past and chunk): `[B, H, K, hd]`.
   */
  function headAttention(q: string, flat: { keys: string; values: string }): string {
    const w = cfg.attentionWindow!;
    // Head p (of the chunk) sees flat indices p + 1 .. p + W of [past; chunk].
    const index = g.op("Reshape", [
      g.op("Add", [
        g.op("Unsqueeze", [headIndex, g.ints([2])]),
        g.ints(Array.from({ length: w }, (_, j) => j + 1)),
      ]),
      g.ints([0, -1, 1]),
    ]); // [B, K·W, 1]
    const gather = (y: string) => g.op("GatherND", [y, index], { batch_dims: { i: 1 } });
    const windowOf = (y: string) =>
      g.op("Transpose", [
        g.op("Reshape", [
          gather(g.op("Transpose", [y], { perm: { ints: [0, 2, 1, 3] } })),
          g.ints([0, -1, w, h, hd]),
        ]),
      ], { perm: { ints: [0, 1, 3, 2, 4] } }); // [B, K, H, W, hd]
    const zeros = g.op("Mul", [g.op("Cast", [ids], { to: { i: 1 } }), g.scalar(0)]);
    const keyBias = g.op("Reshape", [
      gather(g.op("Concat", [pastBias, zeros], { axis: { i: 1 } })),
      g.ints([0, -1, 1, 1, w]),
    ]); // [B, K, 1, 1, W]
    const queries = g.op("Unsqueeze", [
      g.op("Mul", [g.op("Transpose", [q], { perm: { ints: [0, 2, 1, 3] } }), scale]),
      g.ints([3]),
    ]); // [B, K, H, 1, hd]
    const keys = g.op("Transpose", [windowOf(flat.keys)], { perm: { ints: [0, 1, 2, 4, 3] } });
    const scores = g.op("Add", [g.op("MatMul", [queries, keys]), keyBias]);
    const out = g.op("MatMul", [
      g.op("Softmax", [scores], { axis: { i: -1 } }),
      windowOf(flat.values),
    ]); // [B, K, H, 1, hd]
    return g.op("Transpose", [g.op("Reshape", [out, g.ints([0, 0, h, hd])])], {
      perm: { ints: [0, 2, 1, 3] },
    });
  }

  /** The sampler layout's attention: new keys out, the cache never copied. */
  function samplerAttention(l: number, q: string, k: string, v: string): string {
    const kT = g.op("Transpose", [k], { perm: { ints: [0, 1, 3, 2] } });
    g.output(kT, `new.${l}.key`, "float", keyDims);
    g.output(v, `new.${l}.value`, "float", dims);
    // Scores over the past and the new keys separately, never concatenating the cache: a
    // concat would copy every layer's whole cache on every decode step.
    const scores = g.op("Add", [
      g.op("Mul", [
        g.op("Concat", [g.op("MatMul", [q, past[l].k]), g.op("MatMul", [q, kT])], {
          axis: { i: 3 },
        }),
        scale,
      ]),
      bias.add,
    ]);
    const [pPast, pNew] = g.opN(
      "Split",
      [g.op("Softmax", [scores], { axis: { i: -1 } }), bias.split],
      2,
      {
        axis: { i: 3 },
      },
    );
    return g.op("Add", [g.op("MatMul", [pPast, past[l].v]), g.op("MatMul", [pNew, v])]);
  }
}

/**
 * The additive attention bias `add [B, 1, T, S + T]`: the caller's per-slot `key_bias` plus
 * causality among the new tokens (new token `i` sees slots `≤ S + i`); and `split`, the sizes
 * `[S, T]` that cut the attention weights into their past and new parts.
 */
function attentionBias(
  g: GraphBuilder,
  ids: string,
  past: string,
  keyBias: string,
): { add: string; split: string } {
  const scalarDim = (value: string, axis: number) =>
    g.op("Gather", [g.op("Shape", [value]), g.constant([], BigInt64Array.of(BigInt(axis)))], {
      axis: { i: 0 },
    });
  const t = scalarDim(ids, 1), s = scalarDim(past, 2);
  const zero = g.constant([], BigInt64Array.of(0n)), one = g.constant([], BigInt64Array.of(1n));
  const rows = g.op("Unsqueeze", [g.op("Range", [zero, t, one]), g.ints([1])]); // [T, 1]
  const cols = g.op("Range", [zero, g.op("Add", [s, t]), one]); // [S + T]
  const future = g.op("Greater", [cols, g.op("Add", [rows, s])]); // [T, S + T]
  const causal = g.op("Where", [future, g.scalar(MASKED), g.scalar(0)]);
  const rowsBias = g.op("Unsqueeze", [keyBias, g.ints([1])]); // [B, 1, S + T]
  return {
    add: g.op("Unsqueeze", [g.op("Add", [rowsBias, causal]), g.ints([1])]),
    split: g.op("Concat", [
      g.op("Unsqueeze", [s, g.ints([0])]),
      g.op("Unsqueeze", [t, g.ints([0])]),
    ], {
      axis: { i: 0 },
    }),
  };
}

/** GELU, tanh approximation, as jax-js's `nn.gelu(x, {approximate: true})`. */
function gelu(g: GraphBuilder, x: string): string {
  const cube = g.op("Mul", [g.op("Mul", [x, x]), x]);
  const inner = g.op("Mul", [
    g.op("Add", [x, g.op("Mul", [cube, g.scalar(0.044715)])]),
    g.scalar(Math.sqrt(2 / Math.PI)),
  ]);
  const gate = g.op("Add", [g.op("Tanh", [inner]), g.scalar(1)]);
  return g.op("Mul", [g.op("Mul", [x, gate]), g.scalar(0.5)]);
}
