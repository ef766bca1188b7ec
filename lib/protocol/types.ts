/**
 * Tinker's data types on the wire (JSON form): model inputs, tensors, datums, and the
 * results of forward/backward passes and sampling. Field names are exactly the wire's.
 *
 * @module
 */

import { z } from "zod";

const int = () => z.number().int();

/** Token ids of text. */
export const EncodedTextChunkSchema: z.ZodObject<
  { type: z.ZodLiteral<"encoded_text">; tokens: z.ZodArray<z.ZodNumber> },
  z.core.$strip
> = z.object({
  type: z.literal("encoded_text"),
  tokens: z.array(int()),
});

/** An image, base64-encoded. */
export const ImageChunkSchema: z.ZodObject<
  {
    type: z.ZodLiteral<"image">;
    data: z.ZodString;
    format: z.ZodEnum<{ png: "png"; jpeg: "jpeg" }>;
    expected_tokens: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
  },
  z.core.$strip
> = z.object({
  type: z.literal("image"),
  data: z.string(),
  format: z.enum(["png", "jpeg"]),
  expected_tokens: int().nullish(),
});

/** An image referenced by location. */
export const ImageAssetPointerChunkSchema: z.ZodObject<
  {
    type: z.ZodLiteral<"image_asset_pointer">;
    location: z.ZodString;
    format: z.ZodEnum<{ png: "png"; jpeg: "jpeg" }>;
    expected_tokens: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
  },
  z.core.$strip
> = z.object({
  type: z.literal("image_asset_pointer"),
  location: z.string(),
  format: z.enum(["png", "jpeg"]),
  expected_tokens: int().nullish(),
});

/** Audio features (a serialized tensor, base64). */
export const DmelChunkSchema: z.ZodObject<
  { type: z.ZodLiteral<"dmel">; dmel: z.ZodString },
  z.core.$strip
> = z.object({ type: z.literal("dmel"), dmel: z.string() });

/**
 * One chunk of a model input. The `type` tag is inferred from the keys when missing, as
 * Tinker-compatible servers do (`tokens` → encoded_text, `location` → image_asset_pointer,
 * `data` → image).
 */
export const ChunkSchema: z.ZodPreprocess<
  z.ZodDiscriminatedUnion<
    [
      typeof EncodedTextChunkSchema,
      typeof ImageChunkSchema,
      typeof ImageAssetPointerChunkSchema,
      typeof DmelChunkSchema,
    ],
    "type"
  >,
  unknown
> = z.preprocess(
  (c) => {
    if (c && typeof c === "object" && !("type" in c)) {
      const o = c as Record<string, unknown>;
      const type = "tokens" in o
        ? "encoded_text"
        : "location" in o
        ? "image_asset_pointer"
        : "dmel" in o
        ? "dmel"
        : "data" in o
        ? "image"
        : undefined;
      return type ? { ...o, type } : c;
    }
    return c;
  },
  z.discriminatedUnion("type", [
    EncodedTextChunkSchema,
    ImageChunkSchema,
    ImageAssetPointerChunkSchema,
    DmelChunkSchema,
  ]),
);

/** A chunk of a model input. */
export type Chunk = z.infer<typeof ChunkSchema>;

/** A model input: a sequence of chunks (text tokens, images, audio). */
export const ModelInputSchema: z.ZodObject<
  { chunks: z.ZodArray<typeof ChunkSchema> },
  z.core.$strip
> = z.object({ chunks: z.array(ChunkSchema) });

/** A model input. */
export type ModelInput = z.infer<typeof ModelInputSchema>;

/**
 * Flattened tensor values: a plain array (the JSON form) or a typed array. Protobuf results
 * decode into typed arrays (`float32` → Float32Array; `int64` → Int32Array when every value
 * fits 32 bits, else Float64Array), and the protobuf encoder copies typed arrays of the
 * tensor's own width byte for byte, so values can stay typed from the sampler to the server.
 */
export const TensorValuesSchema: z.ZodUnion<
  readonly [
    z.ZodArray<z.ZodNumber>,
    z.ZodCustom<Float32Array<ArrayBufferLike>, Float32Array<ArrayBufferLike>>,
    z.ZodCustom<Int32Array<ArrayBufferLike>, Int32Array<ArrayBufferLike>>,
    z.ZodCustom<Float64Array<ArrayBufferLike>, Float64Array<ArrayBufferLike>>,
  ]
> = z.union([
  z.array(z.number()),
  typedArray<Float32Array>(Float32Array),
  typedArray<Int32Array>(Int32Array),
  typedArray<Float64Array>(Float64Array),
]);

// z.instanceof would narrow to arrays over a plain ArrayBuffer; any backing buffer will do.
function typedArray<T extends Float32Array | Int32Array | Float64Array>(
  ctor: abstract new (...args: never[]) => T,
): z.ZodCustom<T, T> {
  return z.custom<T>((v) => v instanceof ctor, { message: `expected a ${ctor.name}` });
}

/** Flattened tensor values (a plain or a typed array). */
export type TensorValues = z.infer<typeof TensorValuesSchema>;

/**
 * A tensor: flattened values, a dtype (`int64` or `float32` on the public wire), and a
 * shape. 2-D tensors may come as sparse CSR (values in `data`, plus row offsets and columns).
 * `data` is a plain array in JSON and a typed array when decoded from protobuf; read it with
 * indexing, `length` and `for…of` (or `Array.from`), which work on both.
 */
export const TensorDataSchema: z.ZodObject<
  {
    data: typeof TensorValuesSchema;
    dtype: z.ZodEnum<{ float32: "float32"; int64: "int64" }>;
    shape: z.ZodOptional<z.ZodNullable<z.ZodArray<z.ZodNumber>>>;
    sparse_crow_indices: z.ZodOptional<z.ZodNullable<z.ZodArray<z.ZodNumber>>>;
    sparse_col_indices: z.ZodOptional<z.ZodNullable<z.ZodArray<z.ZodNumber>>>;
  },
  z.core.$strip
> = z.object({
  data: TensorValuesSchema,
  dtype: z.enum(["int64", "float32"]),
  shape: z.array(int().nonnegative()).nullish(),
  sparse_crow_indices: z.array(int()).nullish(),
  sparse_col_indices: z.array(int()).nullish(),
});

/** A tensor on the wire. */
export type TensorData = z.infer<typeof TensorDataSchema>;

/** One training example: the input and the loss function's per-token inputs. */
export const DatumSchema: z.ZodObject<
  {
    model_input: typeof ModelInputSchema;
    loss_fn_inputs: z.ZodRecord<z.ZodString, typeof TensorDataSchema>;
  },
  z.core.$strip
> = z.object({
  model_input: ModelInputSchema,
  loss_fn_inputs: z.record(z.string(), TensorDataSchema),
});

/** One training example. */
export type Datum = z.infer<typeof DatumSchema>;

/** The built-in losses. */
export const LossFnTypeSchema: z.ZodEnum<
  {
    importance_sampling: "importance_sampling";
    ppo: "ppo";
    cispo: "cispo";
    dro: "dro";
    cross_entropy: "cross_entropy";
  }
> = z.enum([
  "cross_entropy",
  "importance_sampling",
  "ppo",
  "cispo",
  "dro",
]);

/** A built-in loss name. */
export type LossFnType = z.infer<typeof LossFnTypeSchema>;

/**
 * Result of forward / forward_backward: one record of output tensors per datum (at least
 * `logprobs`) and metrics keyed `<name>:<reduction>` (e.g. `loss:sum`).
 */
export const ForwardBackwardOutputSchema: z.ZodObject<
  {
    loss_fn_output_type: z.ZodString;
    loss_fn_outputs: z.ZodArray<z.ZodRecord<z.ZodString, typeof TensorDataSchema>>;
    metrics: z.ZodRecord<z.ZodString, z.ZodNumber>;
  },
  z.core.$strip
> = z.object({
  loss_fn_output_type: z.string(),
  loss_fn_outputs: z.array(z.record(z.string(), TensorDataSchema)),
  metrics: z.record(z.string(), z.number()),
});

/** Result of forward / forward_backward. */
export type ForwardBackwardOutput = z.infer<typeof ForwardBackwardOutputSchema>;

/** Why sampling stopped: a stop sequence or EOS (`stop`) or max_tokens (`length`). */
export const StopReasonSchema: z.ZodEnum<{ length: "length"; stop: "stop" }> = z.enum([
  "stop",
  "length",
]);

/** One sampled continuation with the sampler's log-probs of its tokens. */
export const SampledSequenceSchema: z.ZodObject<
  {
    stop_reason: typeof StopReasonSchema;
    tokens: z.ZodArray<z.ZodNumber>;
    logprobs: z.ZodOptional<z.ZodNullable<z.ZodArray<z.ZodNumber>>>;
  },
  z.core.$strip
> = z.object({
  stop_reason: StopReasonSchema,
  tokens: z.array(int()),
  logprobs: z.array(z.number()).nullish(),
});

/** Result of a sample request. */
export const SampleResponseSchema: z.ZodObject<
  {
    type: z.ZodOptional<z.ZodLiteral<"sample">>;
    sequences: z.ZodArray<typeof SampledSequenceSchema>;
    prompt_logprobs: z.ZodOptional<z.ZodNullable<z.ZodArray<z.ZodNullable<z.ZodNumber>>>>;
    topk_prompt_logprobs: z.ZodOptional<
      z.ZodNullable<
        z.ZodArray<z.ZodNullable<z.ZodArray<z.ZodTuple<[z.ZodNumber, z.ZodNumber], null>>>>
      >
    >;
    prompt_cache_hit_tokens: z.ZodDefault<z.ZodNumber>;
  },
  z.core.$strip
> = z.object({
  type: z.literal("sample").optional(),
  sequences: z.array(SampledSequenceSchema),
  prompt_logprobs: z.array(z.number().nullable()).nullish(),
  topk_prompt_logprobs: z.array(z.array(z.tuple([int(), z.number()])).nullable()).nullish(),
  prompt_cache_hit_tokens: int().default(0),
});

/** Result of a sample request. */
export type SampleResponse = z.infer<typeof SampleResponseSchema>;
