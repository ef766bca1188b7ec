/**
 * Part of `deno task bench long_prompt`: the learner's attention subgraphs
 * (`lib/local/onnx/train_attention.ts`) alone at the turn's length, so the attention's share of
 * a training step's budget is known before the whole ONNX learner exists. Every layer of
 * `local/long` once: `x_{l+1} = q + attention(x_l, k, v)` forward, then the backward through
 * all of them, on random values, in ONNX Runtime with one intra-op thread.
 *
 * @module
 */

import * as ort from "onnxruntime-node";
import { headWidth, type ModelConfig } from "../lib/local/model/config.ts";
import { GraphBuilder } from "../lib/local/onnx/graph.ts";
import { GPT_OPSET } from "../lib/local/onnx/gpt_graph.ts";
import { causalAttention, queryBlock } from "../lib/local/onnx/train_attention.ts";
import { Rng } from "../lib/util/random.ts";

/** Seconds of two runs (the first pays ONNX Runtime's allocations) over `tokens` positions. */
export async function timeTrainAttention(
  cfg: ModelConfig,
  tokens: number,
): Promise<Record<string, number | string>> {
  const h = cfg.nHeads, hd = headWidth(cfg), window = cfg.attentionWindow;
  const g = new GraphBuilder();
  const dims = [1, h, "time", hd];
  const [q, k, v, dy] = ["q", "k", "v", "dy"].map((n) => g.input(n, "float", dims));
  const ids = g.input("tokens", "int64", [1, "time"]);
  const layers = [];
  let x = q;
  for (let l = 0; l < cfg.nLayers; l++) {
    layers.push(causalAttention(g, x, k, v, { window, tokens: ids }));
    x = g.op("Add", [q, layers[l].y]);
  }
  let dx = dy, dk = "", dv = "";
  for (let l = cfg.nLayers - 1; l >= 0; l--) {
    const d = layers[l].backward(dx);
    dx = d.dq;
    dk = dk ? g.op("Add", [dk, d.dk]) : d.dk;
    dv = dv ? g.op("Add", [dv, d.dv]) : d.dv;
  }
  g.output(dx, "dq", "float", dims);
  g.output(dk, "dk", "float", dims);
  g.output(dv, "dv", "float", dims);
  const session = await ort.InferenceSession.create(g.toModel({ opset: GPT_OPSET }), {
    graphOptimizationLevel: "all",
    intraOpNumThreads: 1,
  });
  const rng = new Rng(1), n = h * tokens * hd;
  const random = () => new ort.Tensor("float32", rng.normalArray(n), [1, h, tokens, hd]);
  const feeds = {
    q: random(),
    k: random(),
    v: random(),
    dy: random(),
    tokens: new ort.Tensor("int64", new BigInt64Array(tokens), [1, tokens]),
  };
  const seconds: number[] = [];
  for (let i = 0; i < 2; i++) {
    const t0 = performance.now();
    await session.run(feeds);
    seconds.push(Number(((performance.now() - t0) / 1000).toFixed(2)));
  }
  await session.release();
  return {
    tokens,
    layers: cfg.nLayers,
    window: window ?? "none",
    query_block: window ? queryBlock(window) : "none",
    threads: 1,
    first_run_seconds: seconds[0],
    second_run_seconds: seconds[1],
  };
}
