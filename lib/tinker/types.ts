/**
 * Ergonomic constructors for the wire types a user touches: model inputs, tensors, datums,
 * and the SDK's defaults for sampling and Adam.
 *
 * @module
 */

import type * as wire from "../protocol/mod.ts";

/** What {@link ModelInput} offers. */
export interface ModelInputHelpers {
  /** One text chunk of these tokens. */
  fromInts(tokens: ArrayLike<number>): wire.ModelInput;
  /** All token ids of a text-only input. */
  toInts(input: wire.ModelInput): number[];
  /** Number of tokens (text chunks only). */
  length(input: wire.ModelInput): number;
}

/** A model input: chunks of token ids (or images), the wire's type. */
export type ModelInput = wire.ModelInput;

/** Model inputs from token ids. */
export const ModelInput: ModelInputHelpers = {
  /** One text chunk of these tokens; plain arrays and typed arrays are accepted. */
  fromInts(tokens: ArrayLike<number>): wire.ModelInput {
    return { chunks: [{ type: "encoded_text", tokens: Array.from(tokens) }] };
  },
  /** All token ids of a text-only input. */
  toInts(input: wire.ModelInput): number[] {
    return input.chunks.flatMap((c) => {
      if (c.type !== "encoded_text") {
        throw new Error(`ModelInput.toInts: a ${c.type} chunk has no token ids`);
      }
      return c.tokens;
    });
  },
  /** Number of tokens (text chunks only). */
  length(input: wire.ModelInput): number {
    return input.chunks.reduce((n, c) => n + (c.type === "encoded_text" ? c.tokens.length : 0), 0);
  },
};

/** What {@link TensorData} offers. */
export interface TensorDataHelpers {
  /** A tensor of a copy of `data` (see {@link TensorData}). */
  fromArray(
    data: ArrayLike<number>,
    dtype?: "int64" | "float32",
    shape?: number[],
  ): wire.TensorData;
}

/** A tensor: flattened values, a dtype and a shape, the wire's type. */
export type TensorData = wire.TensorData;

/** Tensors from arrays. */
export const TensorData: TensorDataHelpers = {
  /**
   * A 1-D (or given `shape`) tensor of a copy of `data`; `int64` for ids, `float32` otherwise.
   * A Float32Array, Int32Array or Float64Array stays typed (the protobuf encoder then copies
   * its bytes as they are when they match the dtype); other array-likes become plain arrays.
   *
   * @example
   * TensorData.fromArray(Float32Array.from([0.5, -1]));        // float32, kept typed
   * TensorData.fromArray(Int32Array.from([42, 7]), "int64");   // int64 ids, sent as 8 bytes each
   */
  fromArray(
    data: ArrayLike<number>,
    dtype: "int64" | "float32" = "float32",
    shape?: number[],
  ): wire.TensorData {
    const values = data instanceof Float32Array || data instanceof Int32Array ||
        data instanceof Float64Array
      ? data.slice()
      : Array.from(data);
    return { data: values, dtype, shape: shape ?? [data.length] };
  },
};

/** Loss inputs whose values are token ids (sent as int64); all others are float32. */
const INT_INPUTS = new Set(["target_tokens"]);

/**
 * A datum from its input tokens and per-token loss inputs.
 *
 * @example
 * // next-token prediction on "tokens": inputs tokens[:-1], targets tokens[1:]
 * datum(tokens.slice(0, -1), { target_tokens: tokens.slice(1), weights });
 */
export function datum(
  inputTokens: ArrayLike<number>,
  lossFnInputs: Record<string, ArrayLike<number> | wire.TensorData>,
): wire.Datum {
  const inputs: Record<string, wire.TensorData> = {};
  for (const [k, v] of Object.entries(lossFnInputs)) {
    inputs[k] = "dtype" in v ? v : TensorData.fromArray(v, INT_INPUTS.has(k) ? "int64" : "float32");
  }
  return { model_input: ModelInput.fromInts(inputTokens), loss_fn_inputs: inputs };
}

/** Sampling settings, with the SDK's defaults. */
export interface SamplingParams {
  /** Tokens to generate at most. */
  maxTokens?: number;
  /** Sampling temperature (default 1). */
  temperature?: number;
  /** Keep the k most likely tokens (-1, the default: all). */
  topK?: number;
  /** Nucleus sampling's probability mass (default 1). */
  topP?: number;
  /** Seed for a reproducible draw. */
  seed?: number;
  /** Stop strings or stop token ids. */
  stop?: string | string[] | number[];
}

/** Adam settings in the wire's names: the protocol's one definition. */
export type { AdamParams } from "../protocol/mod.ts";
