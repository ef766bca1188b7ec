/**
 * Response bodies of Tinker's REST endpoints (JSON form). The official SDK validates these
 * strictly, so the fields marked required here are required on the wire.
 *
 * @module
 */

import { z } from "zod";

const int = () => z.number().int();

/** `POST client/config`: server-chosen client behaviour (all optional). */
export const ClientConfigResponseSchema: z.ZodObject<
  {
    pjwt_auth_enabled: z.ZodOptional<z.ZodBoolean>;
    use_pyqwest_transport: z.ZodOptional<z.ZodBoolean>;
    proto_compress_fwdbwd: z.ZodOptional<z.ZodBoolean>;
    parallel_fwdbwd_chunks: z.ZodOptional<z.ZodBoolean>;
    create_model_via_load_weights: z.ZodOptional<z.ZodBoolean>;
    fwdbwd_max_chunk_len: z.ZodOptional<z.ZodNumber>;
    fwdbwd_max_chunk_bytes_count: z.ZodOptional<z.ZodNumber>;
  },
  z.core.$loose
> = z.looseObject({
  pjwt_auth_enabled: z.boolean().optional(),
  use_pyqwest_transport: z.boolean().optional(),
  proto_compress_fwdbwd: z.boolean().optional(),
  parallel_fwdbwd_chunks: z.boolean().optional(),
  create_model_via_load_weights: z.boolean().optional(),
  fwdbwd_max_chunk_len: int().optional(),
  fwdbwd_max_chunk_bytes_count: int().optional(),
});

/** `GET get_server_capabilities`. */
export const GetServerCapabilitiesResponseSchema: z.ZodObject<
  {
    supported_models: z.ZodArray<
      z.ZodObject<
        {
          model_name: z.ZodOptional<z.ZodNullable<z.ZodString>>;
          max_context_length: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
        },
        z.core.$strip
      >
    >;
  },
  z.core.$strip
> = z.object({
  supported_models: z.array(z.object({
    model_name: z.string().nullish(),
    max_context_length: int().nullish(),
  })),
});

/** Server capabilities. */
export type GetServerCapabilitiesResponse = z.infer<typeof GetServerCapabilitiesResponseSchema>;

/** `POST get_info`. */
export const GetInfoResponseSchema: z.ZodObject<
  {
    type: z.ZodOptional<z.ZodLiteral<"get_info">>;
    model_id: z.ZodString;
    model_data: z.ZodObject<
      {
        arch: z.ZodOptional<z.ZodNullable<z.ZodString>>;
        model_name: z.ZodString;
        tokenizer_id: z.ZodOptional<z.ZodNullable<z.ZodString>>;
      },
      z.core.$strip
    >;
    is_lora: z.ZodOptional<z.ZodNullable<z.ZodBoolean>>;
    lora_rank: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
    model_name: z.ZodOptional<z.ZodNullable<z.ZodString>>;
  },
  z.core.$strip
> = z.object({
  type: z.literal("get_info").optional(),
  model_id: z.string(),
  model_data: z.object({
    arch: z.string().nullish(),
    model_name: z.string(),
    tokenizer_id: z.string().nullish(),
  }),
  is_lora: z.boolean().nullish(),
  lora_rank: int().nullish(),
  model_name: z.string().nullish(),
});

/** Model information. */
export type GetInfoResponse = z.infer<typeof GetInfoResponseSchema>;

/** `POST weights_info`. */
export const WeightsInfoResponseSchema: z.ZodObject<
  {
    base_model: z.ZodString;
    is_lora: z.ZodBoolean;
    lora_rank: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
    train_unembed: z.ZodOptional<z.ZodNullable<z.ZodBoolean>>;
    train_mlp: z.ZodOptional<z.ZodNullable<z.ZodBoolean>>;
    train_attn: z.ZodOptional<z.ZodNullable<z.ZodBoolean>>;
  },
  z.core.$strip
> = z.object({
  base_model: z.string(),
  is_lora: z.boolean(),
  lora_rank: int().nullish(),
  train_unembed: z.boolean().nullish(),
  train_mlp: z.boolean().nullish(),
  train_attn: z.boolean().nullish(),
});

/** What a checkpoint was trained from. */
export type WeightsInfoResponse = z.infer<typeof WeightsInfoResponseSchema>;

/** A checkpoint in listings. */
export const CheckpointSchema: z.ZodObject<
  {
    checkpoint_id: z.ZodString;
    checkpoint_type: z.ZodEnum<{ training: "training"; sampler: "sampler" }>;
    time: z.ZodString;
    tinker_path: z.ZodString;
    size_bytes: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
    public: z.ZodDefault<z.ZodBoolean>;
    expires_at: z.ZodOptional<z.ZodNullable<z.ZodString>>;
  },
  z.core.$strip
> = z.object({
  checkpoint_id: z.string(),
  checkpoint_type: z.enum(["training", "sampler"]),
  time: z.string(),
  tinker_path: z.string(),
  size_bytes: int().nullish(),
  public: z.boolean().default(false),
  expires_at: z.string().nullish(),
});

/** A checkpoint in listings. */
export type Checkpoint = z.infer<typeof CheckpointSchema>;

/** Pagination of list endpoints. */
export const CursorSchema: z.ZodObject<
  { offset: z.ZodNumber; limit: z.ZodNumber; total_count: z.ZodNumber },
  z.core.$strip
> = z.object({
  offset: int(),
  limit: int(),
  total_count: int(),
});

/** A training run. `model_owner` and `last_request_time` are required by the SDK. */
export const TrainingRunSchema: z.ZodObject<
  {
    training_run_id: z.ZodString;
    base_model: z.ZodString;
    model_owner: z.ZodString;
    is_lora: z.ZodBoolean;
    corrupted: z.ZodDefault<z.ZodBoolean>;
    lora_rank: z.ZodOptional<z.ZodNullable<z.ZodNumber>>;
    last_request_time: z.ZodString;
    last_checkpoint: z.ZodOptional<z.ZodNullable<typeof CheckpointSchema>>;
    last_sampler_checkpoint: z.ZodOptional<z.ZodNullable<typeof CheckpointSchema>>;
    user_metadata: z.ZodOptional<z.ZodNullable<z.ZodRecord<z.ZodString, z.ZodString>>>;
  },
  z.core.$strip
> = z.object({
  training_run_id: z.string(),
  base_model: z.string(),
  model_owner: z.string(),
  is_lora: z.boolean(),
  corrupted: z.boolean().default(false),
  lora_rank: int().nullish(),
  last_request_time: z.string(),
  last_checkpoint: CheckpointSchema.nullish(),
  last_sampler_checkpoint: CheckpointSchema.nullish(),
  user_metadata: z.record(z.string(), z.string()).nullish(),
});

/** A training run. */
export type TrainingRun = z.infer<typeof TrainingRunSchema>;

/** A future's handle: every queued operation answers with this. */
export const UntypedFutureSchema: z.ZodObject<
  { request_id: z.ZodString; model_id: z.ZodOptional<z.ZodNullable<z.ZodString>> },
  z.core.$strip
> = z.object({
  request_id: z.string(),
  model_id: z.string().nullish(),
});

/** `retrieve_future` while the result is not ready: poll again. */
export const TryAgainResponseSchema: z.ZodObject<
  {
    type: z.ZodLiteral<"try_again">;
    request_id: z.ZodString;
    queue_state: z.ZodOptional<z.ZodNullable<z.ZodString>>;
    queue_state_reason: z.ZodOptional<z.ZodNullable<z.ZodString>>;
  },
  z.core.$strip
> = z.object({
  type: z.literal("try_again"),
  request_id: z.string(),
  queue_state: z.string().nullish(),
  queue_state_reason: z.string().nullish(),
});

/** `retrieve_future` of a failed request. */
export const RequestFailedResponseSchema: z.ZodObject<
  { error: z.ZodString; category: z.ZodString },
  z.core.$strip
> = z.object({
  error: z.string(),
  category: z.string(),
});
