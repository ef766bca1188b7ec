/**
 * The local GPT on ONNX Runtime (`onnxruntime-node`, CPU): one inference session per set of
 * weights, run on host arrays. See `gpt_graph.ts` for the graph's inputs and outputs.
 *
 * @module
 */

import * as ort from "onnxruntime-node";
import type { ModelConfig } from "../model/config.ts";
import type { NamedTensors } from "../tensors.ts";
import { buildGptGraph } from "./gpt_graph.ts";

/** One run's inputs: `rows` rows of `tokens` new tokens over `slots` cached slots. */
export interface GptRunInput {
  rows: number;
  tokens: number;
  slots: number;
  /** `[rows, tokens]` token ids and positions. */
  ids: BigInt64Array;
  positions: BigInt64Array;
  /** `[rows, slots + tokens]`: 0 or `MASKED` per key slot. */
  keyBias: Float32Array;
  /** `[rows, heads]` positions (of `tokens`) whose log-distributions come back. */
  headIndex: BigInt64Array;
  heads: number;
  /** Per layer keys `[rows, H, hd, slots]` (transposed) and values `[rows, H, slots, hd]`. */
  pastKeys: Float32Array[];
  /** `[rows, slots]` the position of each past slot: required by a windowed model (a ring). */
  keyPositions?: BigInt64Array;
  pastValues: Float32Array[];
}

/** One run's outputs. */
export interface GptRunOutput {
  /** `[rows, heads, V]` log-softmax of the raw logits. */
  logprobs: Float32Array;
  /** Per layer the new tokens' keys `[rows, H, hd, tokens]` and values `[rows, H, tokens, hd]`. */
  keys: Float32Array[];
  values: Float32Array[];
}

/**
 * One prefill run of a windowed model (`gpt_graph.ts`'s `prefill` layout): `rows` rows of
 * `tokens` prompt positions (a multiple of the query block) after the `window` positions each
 * row has before them.
 */
export interface PrefillRunInput {
  rows: number;
  tokens: number;
  /** `[rows, tokens]` token ids and positions. */
  ids: BigInt64Array;
  positions: BigInt64Array;
  /** `[rows, heads]` positions (of `tokens`) whose log-distributions come back. */
  headIndex: BigInt64Array;
  heads: number;
  /** `[rows, window]`: 0 or `MASKED` per position before the chunk. */
  pastBias: Float32Array;
  /** Per layer the window before the chunk: keys `[rows, H, hd, W]`, values `[rows, H, W, hd]`. */
  pastKeys: Float32Array[];
  pastValues: Float32Array[];
}

/** Options of {@link GptSession.create}. */
export interface GptSessionOptions {
  /**
   * Pass the weights as inputs on every run instead of storing them in the graph. Slower per
   * run (no pre-packing, no constant folding), but making a session costs no graph build;
   * `bench/suites/local_engine.ts` measures both.
   */
  weightsAsInputs?: boolean;
  /** ONNX Runtime's intra-op threads; default: its own choice (one per core). */
  threads?: number;
}

/**
 * A GPT with fixed weights on ONNX Runtime.
 *
 * @example
 * const gpt = await GptSession.create(cfg, foldedWeights);
 * const out = await gpt.run(input);
 * await gpt.release();
 */
export class GptSession {
  readonly config: ModelConfig;
  readonly #session: ort.InferenceSession;
  readonly #weightFeeds: Record<string, ort.Tensor>;
  readonly #prefill: ort.InferenceSession | null;

  private constructor(
    config: ModelConfig,
    session: ort.InferenceSession,
    weightFeeds: Record<string, ort.Tensor>,
    prefill: ort.InferenceSession | null,
  ) {
    this.config = config;
    this.#session = session;
    this.#weightFeeds = weightFeeds;
    this.#prefill = prefill;
  }

  /** Builds the graph of `cfg` with `weights` (LoRA already folded in) and loads it. */
  static async create(
    config: ModelConfig,
    weights: NamedTensors,
    opts: GptSessionOptions = {},
  ): Promise<GptSession> {
    const options: ort.InferenceSession.SessionOptions = {
      graphOptimizationLevel: "all",
      executionMode: "sequential",
      ...(opts.threads ? { intraOpNumThreads: opts.threads } : {}),
    };
    const build = (layout: "sampler" | "prefill") =>
      buildGptGraph(config, { weights, weightsAsInputs: opts.weightsAsInputs, layout });
    const session = await ort.InferenceSession.create(build("sampler"), options);
    // A windowed model's long prompts run in the blocked prefill graph. One thread, as decode:
    // a second one made a 55k-token prefill slower on the shared machine, spinning or not
    // (docs/sampling-engine.md).
    const prefill = config.attentionWindow
      ? await ort.InferenceSession.create(build("prefill"), options)
      : null;
    return new GptSession(
      config,
      session,
      opts.weightsAsInputs ? weightFeeds(weights) : {},
      prefill,
    );
  }

  /**
   * The same session over other weights, for a session made with `weightsAsInputs` (a new
   * version without a rebuild). The two share the native session: release only one.
   */
  withWeights(weights: NamedTensors): GptSession {
    if (Object.keys(this.#weightFeeds).length === 0) {
      throw new Error("GptSession.withWeights: the session stores its weights in the graph");
    }
    return new GptSession(this.config, this.#session, weightFeeds(weights), this.#prefill);
  }

  /** Runs the model once. */
  async run(input: GptRunInput): Promise<GptRunOutput> {
    const cfg = this.config;
    const h = cfg.nHeads, hd = cfg.dModel / cfg.nHeads;
    const { rows, tokens, slots } = input;
    const feeds: Record<string, ort.Tensor> = {
      ...this.#weightFeeds,
      input_ids: new ort.Tensor("int64", input.ids, [rows, tokens]),
      position_ids: new ort.Tensor("int64", input.positions, [rows, tokens]),
      key_bias: new ort.Tensor("float32", input.keyBias, [rows, slots + tokens]),
      head_index: new ort.Tensor("int64", input.headIndex, [rows, input.heads]),
    };
    if (cfg.attentionWindow) {
      if (!input.keyPositions) {
        throw new Error("GptSession.run: a windowed model needs keyPositions");
      }
      feeds.key_positions = new ort.Tensor("int64", input.keyPositions, [rows, slots]);
    }
    for (let l = 0; l < cfg.nLayers; l++) {
      feeds[`past.${l}.key`] = new ort.Tensor("float32", input.pastKeys[l], [rows, h, hd, slots]);
      feeds[`past.${l}.value`] = new ort.Tensor("float32", input.pastValues[l], [
        rows,
        h,
        slots,
        hd,
      ]);
    }
    return outputs(cfg, await this.#session.run(feeds));
  }

  /** Runs a chunk of long prompts through the prefill graph (windowed models only). */
  async prefill(input: PrefillRunInput): Promise<GptRunOutput> {
    const cfg = this.config, w = cfg.attentionWindow;
    if (!this.#prefill || !w) throw new Error("GptSession.prefill: not a windowed model");
    const h = cfg.nHeads, hd = cfg.dModel / cfg.nHeads;
    const { rows, tokens } = input;
    const feeds: Record<string, ort.Tensor> = {
      ...this.#weightFeeds,
      input_ids: new ort.Tensor("int64", input.ids, [rows, tokens]),
      position_ids: new ort.Tensor("int64", input.positions, [rows, tokens]),
      head_index: new ort.Tensor("int64", input.headIndex, [rows, input.heads]),
      past_bias: new ort.Tensor("float32", input.pastBias, [rows, w]),
    };
    for (let l = 0; l < cfg.nLayers; l++) {
      feeds[`past.${l}.key`] = new ort.Tensor("float32", input.pastKeys[l], [rows, h, hd, w]);
      feeds[`past.${l}.value`] = new ort.Tensor("float32", input.pastValues[l], [rows, h, w, hd]);
    }
    return outputs(cfg, await this.#prefill.run(feeds));
  }

  /** Frees the native sessions. */
  async release(): Promise<void> {
    await this.#session.release();
    await this.#prefill?.release();
  }
}

function outputs(cfg: ModelConfig, out: ort.InferenceSession.ReturnType): GptRunOutput {
  const data = (name: string) => out[name].data as Float32Array;
  return {
    logprobs: data("logprobs"),
    keys: Array.from({ length: cfg.nLayers }, (_, l) => data(`new.${l}.key`)),
    values: Array.from({ length: cfg.nLayers }, (_, l) => data(`new.${l}.value`)),
  };
}

function weightFeeds(weights: NamedTensors): Record<string, ort.Tensor> {
  const feeds: Record<string, ort.Tensor> = {};
  for (const [name, t] of weights) feeds[name] = new ort.Tensor("float32", t.data, t.shape);
  return feeds;
}
