/**
 * Request bodies of Tinker's REST endpoints (JSON form), as the official SDK 0.25 sends them.
 * The SDK omits `None` fields and always sends a `type` tag; unknown keys are stripped, so
 * newer clients with extra fields still work.
 *
 * @module
 */

import { z } from "zod";
import { DatumSchema, ModelInputSchema } from "./types.ts";

const int = () => z.number().int();
const id = () => z.string().min(1);
const metadata = () => z.record(z.string(), z.string()).nullish();

/** `POST create_session`. */
export const CreateSessionRequestSchema: z.ZodObject<
  {
    tags: z.ZodDefault<z.ZodArray<z.ZodString>>;
    user_metadata: z.ZodOptional<z.ZodNullable<z.ZodRecord<z.ZodString, z.ZodString>>>;
    sdk_version: z.ZodOptional<z.ZodNullable<z.ZodString>>;
    project_id: z.ZodOptional<z.ZodNullable<z.ZodString>>;
  },
  z.core.$strip
> = z.object({
  tags: z.array(z.string()).default([]),
  user_metadata: metadata(),
  sdk_version: z.string().nullish(),
  project_id: z.string().nullish(),
});

/** `POST session_heartbeat`. */
export const SessionHeartbeatRequestSchema: z.ZodObject<
  { session_id: z.ZodString },
  z.core.$strip
> = z.object({ session_id: id() });

/** LoRA settings of `create_model`; the SDK's defaults are rank 32 and every group trained. */
export const LoraConfigSchema: z.ZodObject<
  {
    rank: z.ZodDefault<z.ZodNumber>;
    seed: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
    train_unembed: z.ZodDefault<z.ZodBoolean>;
    train_mlp: z.ZodDefault<z.ZodBoolean>;
    train_attn: z.ZodDefault<z.ZodBoolean>;
  },
  z.core.$strip
> = z.object({
  rank: int().positive().default(32),
  seed: int().nullish(),
  train_unembed: z.boolean().default(true),
  train_mlp: z.boolean().default(true),
  train_attn: z.boolean().default(true),
});

/** `POST create_model`. */
export const CreateModelRequestSchema: z.ZodObject<
  {
    session_id: z.ZodString;
    model_seq_id: z.ZodNumber;
    base_model: z.ZodString;
    user_metadata: z.ZodOptional<z.ZodNullable<z.ZodRecord<z.ZodString, z.ZodString>>>;
    lora_config: z.ZodOptional<z.ZodNullable<typeof LoraConfigSchema>>;
  },
  z.core.$strip
> = z.object({
  session_id: id(),
  model_seq_id: int().nonnegative(),
  base_model: id(),
  user_metadata: metadata(),
  lora_config: LoraConfigSchema.nullish(),
});

/** A `create_model` request. */
export type CreateModelRequest = z.infer<typeof CreateModelRequestSchema>;

/** `POST get_info`. */
export const GetInfoRequestSchema: z.ZodObject<{ model_id: z.ZodString }, z.core.$strip> = z.object(
  { model_id: id() },
);

/** `POST unload_model`. */
export const UnloadModelRequestSchema: z.ZodObject<{ model_id: z.ZodString }, z.core.$strip> = z
  .object({ model_id: id() });

/** The loss function call shared by forward and forward_backward. */
export const ForwardBackwardInputSchema: z.ZodObject<
  {
    data: z.ZodArray<typeof DatumSchema>;
    loss_fn: z.ZodString;
    loss_fn_config: z.ZodOptional<z.ZodNullable<z.ZodRecord<z.ZodString, z.ZodNumber>>>;
  },
  z.core.$strip
> = z.object({
  data: z.array(DatumSchema),
  loss_fn: z.string(),
  loss_fn_config: z.record(z.string(), z.number()).nullish(),
});

/** `POST forward_backward`, JSON form (SDK ≤ 0.24; 0.25 sends protobuf). */
export const ForwardBackwardRequestSchema: z.ZodObject<
  {
    forward_backward_input: typeof ForwardBackwardInputSchema;
    model_id: z.ZodString;
    seq_id: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
  },
  z.core.$strip
> = z.object({
  forward_backward_input: ForwardBackwardInputSchema,
  model_id: id(),
  seq_id: int().nullish(),
});

/** `POST forward` (SDK ≤ 0.24). */
export const ForwardRequestSchema: z.ZodObject<
  {
    forward_input: typeof ForwardBackwardInputSchema;
    model_id: z.ZodString;
    seq_id: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
  },
  z.core.$strip
> = z.object({
  forward_input: ForwardBackwardInputSchema,
  model_id: id(),
  seq_id: int().nullish(),
});

/** Adam's hyper-parameters; absent fields take the SDK's defaults on the server. */
export const AdamParamsSchema: z.ZodObject<
  {
    learning_rate: z.ZodOptional<z.ZodNumber>;
    beta1: z.ZodOptional<z.ZodNumber>;
    beta2: z.ZodOptional<z.ZodNumber>;
    eps: z.ZodOptional<z.ZodNumber>;
    weight_decay: z.ZodOptional<z.ZodNumber>;
    grad_clip_norm: z.ZodOptional<z.ZodNumber>;
  },
  z.core.$strip
> = z.object({
  learning_rate: z.number().nonnegative().optional(),
  beta1: z.number().min(0).lt(1).optional(),
  beta2: z.number().min(0).lt(1).optional(),
  eps: z.number().positive().optional(),
  weight_decay: z.number().nonnegative().optional(),
  grad_clip_norm: z.number().nonnegative().optional(),
});

/**
 * Tinker's `AdamParams`, in the wire's field names: the one definition the client sends and the
 * local backend applies (absent fields take `ADAM_DEFAULTS`).
 */
export type AdamParams = z.infer<typeof AdamParamsSchema>;

/**
 * The official SDK's (0.25.0) defaults of every Adam parameter. Our client sends all six, as
 * the SDK does, so no server's own defaults decide one; the local backend fills absent ones
 * with these too.
 */
export const ADAM_DEFAULTS: Readonly<Required<AdamParams>> = {
  learning_rate: 1e-4,
  beta1: 0.9,
  beta2: 0.95,
  eps: 1e-12,
  weight_decay: 0,
  grad_clip_norm: 0,
};

/** `POST optim_step`. */
export const OptimStepRequestSchema: z.ZodObject<
  {
    adam_params: typeof AdamParamsSchema;
    model_id: z.ZodString;
    seq_id: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
  },
  z.core.$strip
> = z.object({
  adam_params: AdamParamsSchema,
  model_id: id(),
  seq_id: int().nullish(),
});

/** `POST save_weights` (`save_state`: weights and optimizer state). */
export const SaveWeightsRequestSchema: z.ZodObject<
  {
    model_id: z.ZodString;
    path: z.ZodOptional<z.ZodNullable<z.ZodString>>;
    seq_id: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
    ttl_seconds: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
    overwrite: z.ZodOptional<z.ZodBoolean>;
  },
  z.core.$strip
> = z.object({
  model_id: id(),
  path: z.string().nullish(),
  seq_id: int().nullish(),
  ttl_seconds: int().positive().nullish(),
  overwrite: z.boolean().optional(),
});

/** A `save_weights` request. */
export type SaveWeightsRequest = z.infer<typeof SaveWeightsRequestSchema>;

/**
 * `POST save_weights_for_sampler`: named (`path`) or unnamed (`sampling_session_seq_id`,
 * creating a sampling session as `save_weights_and_get_sampling_client` needs).
 */
export const SaveWeightsForSamplerRequestSchema: z.ZodObject<
  {
    model_id: z.ZodString;
    path: z.ZodOptional<z.ZodNullable<z.ZodString>>;
    seq_id: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
    sampling_session_seq_id: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
    ttl_seconds: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
  },
  z.core.$strip
> = z.object({
  model_id: id(),
  path: z.string().nullish(),
  seq_id: int().nullish(),
  sampling_session_seq_id: int().nonnegative().nullish(),
  ttl_seconds: int().positive().nullish(),
});

/** A `save_weights_for_sampler` request. */
export type SaveWeightsForSamplerRequest = z.infer<typeof SaveWeightsForSamplerRequestSchema>;

/**
 * `POST load_weights`: into an existing model (`model_id` + `seq_id`), or creating the model
 * from the checkpoint (`session_id` + `model_seq_id`).
 */
export const LoadWeightsRequestSchema: z.ZodObject<
  {
    model_id: z.ZodOptional<z.ZodNullable<z.ZodString>>;
    seq_id: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
    path: z.ZodString;
    optimizer: z.ZodDefault<z.ZodBoolean>;
    weights_access_token: z.ZodOptional<z.ZodNullable<z.ZodString>>;
    session_id: z.ZodOptional<z.ZodNullable<z.ZodString>>;
    model_seq_id: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
    base_model: z.ZodOptional<z.ZodNullable<z.ZodString>>;
    user_metadata: z.ZodOptional<z.ZodNullable<z.ZodRecord<z.ZodString, z.ZodString>>>;
  },
  z.core.$strip
> = z.object({
  model_id: z.string().nullish(),
  seq_id: int().nullish(),
  path: z.string(),
  optimizer: z.boolean().default(false),
  weights_access_token: z.string().nullish(),
  session_id: z.string().nullish(),
  model_seq_id: int().nonnegative().nullish(),
  base_model: z.string().nullish(),
  user_metadata: metadata(),
});

/** A `load_weights` request. */
export type LoadWeightsRequest = z.infer<typeof LoadWeightsRequestSchema>;

/** `POST weights_info`. */
export const WeightsInfoRequestSchema: z.ZodObject<{ tinker_path: z.ZodString }, z.core.$strip> = z
  .object({ tinker_path: z.string() });

/** `POST create_sampling_session`: exactly one of `base_model` and `model_path`. */
export const CreateSamplingSessionRequestSchema: z.ZodObject<
  {
    session_id: z.ZodString;
    sampling_session_seq_id: z.ZodNumber;
    base_model: z.ZodOptional<z.ZodNullable<z.ZodString>>;
    model_path: z.ZodOptional<z.ZodNullable<z.ZodString>>;
  },
  z.core.$strip
> = z.object({
  session_id: id(),
  sampling_session_seq_id: int().nonnegative(),
  base_model: z.string().nullish(),
  model_path: z.string().nullish(),
});

/** A `create_sampling_session` request. */
export type CreateSamplingSessionRequest = z.infer<typeof CreateSamplingSessionRequestSchema>;

/** Sampling settings; `stop` is a string, a list of strings, or a list of token ids. */
export const SamplingParamsSchema: z.ZodObject<
  {
    max_tokens: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
    seed: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
    stop: z.ZodOptional<
      z.ZodNullable<
        z.ZodUnion<readonly [z.ZodString, z.ZodArray<z.ZodString>, z.ZodArray<z.ZodNumber>]>
      >
    >;
    temperature: z.ZodDefault<z.ZodNumber>;
    top_k: z.ZodDefault<z.ZodNumber>;
    top_p: z.ZodDefault<z.ZodNumber>;
  },
  z.core.$strip
> = z.object({
  max_tokens: int().positive().nullish(),
  seed: int().nullish(),
  stop: z.union([z.string(), z.array(z.string()), z.array(int())]).nullish(),
  temperature: z.number().nonnegative().default(1),
  top_k: int().default(-1),
  top_p: z.number().gt(0).max(1).default(1),
});

/** `POST asample`. */
export const SampleRequestSchema: z.ZodObject<
  {
    num_samples: z.ZodDefault<z.ZodNumber>;
    prompt: typeof ModelInputSchema;
    sampling_params: typeof SamplingParamsSchema;
    sampling_session_id: z.ZodOptional<z.ZodNullable<z.ZodString>>;
    seq_id: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
    base_model: z.ZodOptional<z.ZodNullable<z.ZodString>>;
    model_path: z.ZodOptional<z.ZodNullable<z.ZodString>>;
    prompt_logprobs: z.ZodOptional<z.ZodNullable<z.ZodBoolean>>;
    topk_prompt_logprobs: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
  },
  z.core.$strip
> = z.object({
  num_samples: int().positive().default(1),
  prompt: ModelInputSchema,
  sampling_params: SamplingParamsSchema,
  sampling_session_id: z.string().nullish(),
  seq_id: int().nullish(),
  base_model: z.string().nullish(),
  model_path: z.string().nullish(),
  prompt_logprobs: z.boolean().nullish(),
  topk_prompt_logprobs: int().nonnegative().nullish(),
});

/** An `asample` request. */
export type SampleRequest = z.infer<typeof SampleRequestSchema>;

/** `POST retrieve_future`. */
export const RetrieveFutureRequestSchema: z.ZodObject<
  { request_id: z.ZodString; allow_metadata_only: z.ZodOptional<z.ZodBoolean> },
  z.core.$strip
> = z.object({
  request_id: id(),
  allow_metadata_only: z.boolean().optional(),
});

/** `PUT training_runs/{run}/checkpoints/{kind}/{name}/ttl`. */
export const SetCheckpointTtlRequestSchema: z.ZodObject<
  { ttl_seconds: z.ZodNullable<z.ZodNumber> },
  z.core.$strip
> = z.object({ ttl_seconds: int().nullable() });
