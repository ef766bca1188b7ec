/**
 * Sizes of the local GPT and of its LoRA adapters, as zod schemas because they cross
 * boundaries (the model registry, checkpoint metadata, create_model requests).
 *
 * @module
 */

import { z } from "zod";

/** Architecture hyper-parameters of the local pre-LN GPT decoder. */
export const ModelConfigSchema: z.ZodObject<
  {
    vocabSize: z.ZodNumber;
    dModel: z.ZodNumber;
    nLayers: z.ZodNumber;
    nHeads: z.ZodNumber;
    maxSeqLen: z.ZodNumber;
    mlpRatio: z.ZodDefault<z.ZodNumber>;
    positions: z.ZodDefault<z.ZodEnum<{ learned: "learned"; rope: "rope" }>>;
    ropeTheta: z.ZodDefault<z.ZodNumber>;
    attentionWindow: z.ZodOptional<z.ZodNumber>;
  },
  z.core.$strip
> = z.object({
  /** Vocabulary size (rows of the embedding, columns of the LM head). */
  vocabSize: z.number().int().positive(),
  /** Residual stream width. */
  dModel: z.number().int().positive(),
  /** Number of transformer blocks. */
  nLayers: z.number().int().positive(),
  /** Attention heads; must divide dModel. */
  nHeads: z.number().int().positive(),
  /**
   * Context length: the longest sequence the model takes (with learned positions, the rows of
   * the position table).
   */
  maxSeqLen: z.number().int().positive(),
  /** MLP hidden width as a multiple of dModel (GPT-2 uses 4). */
  mlpRatio: z.number().int().positive().default(4),
  /**
   * `learned`: a position table `wpe` added to the token embeddings (GPT-2). `rope`: rotary
   * embeddings on each head's queries and keys (rotate-half, as GPT-NeoX), no position table,
   * so attention depends only on the distance between tokens and runs at any length.
   */
  positions: z.enum(["learned", "rope"]).default("learned"),
  /** Base of the rotary frequencies, `theta^(-2i/hd)`. */
  ropeTheta: z.number().positive().default(10000),
  /**
   * Sliding-window attention: a token attends to itself and the `attentionWindow - 1` tokens
   * before it. Absent: full causal attention. Cost grows linearly with the sequence.
   */
  attentionWindow: z.number().int().positive().optional(),
}).refine((c) => c.dModel % c.nHeads === 0, { message: "nHeads must divide dModel" })
  .refine((c) => c.positions === "rope" || c.attentionWindow === undefined, {
    message: "attentionWindow needs positions: rope (a learned table fixes the length)",
  })
  .refine((c) => c.positions === "learned" || (c.dModel / c.nHeads) % 2 === 0, {
    message: "rope needs an even head width",
  });

/** Architecture hyper-parameters of the local GPT. */
export type ModelConfig = z.infer<typeof ModelConfigSchema>;

/**
 * LoRA adapter settings. `rank`, `seed` and the `train*` switches come from Tinker's
 * `lora_config`; `alpha` is not on Tinker's wire, and 32 is what Tinker-compatible servers
 * assume (scale = alpha / rank).
 */
export const LoraSpecSchema: z.ZodObject<
  {
    rank: z.ZodNumber;
    alpha: z.ZodDefault<z.ZodNumber>;
    seed: z.ZodDefault<z.ZodNumber>;
    trainAttn: z.ZodDefault<z.ZodBoolean>;
    trainMlp: z.ZodDefault<z.ZodBoolean>;
    trainUnembed: z.ZodDefault<z.ZodBoolean>;
  },
  z.core.$strip
> = z.object({
  rank: z.number().int().positive().max(1024),
  alpha: z.number().positive().default(32),
  seed: z.number().int().default(0),
  trainAttn: z.boolean().default(true),
  trainMlp: z.boolean().default(true),
  trainUnembed: z.boolean().default(true),
}).refine((l) => l.trainAttn || l.trainMlp || l.trainUnembed, {
  message: "at least one of train_attn, train_mlp, train_unembed must be true",
});

/** LoRA adapter settings. */
export type LoraSpec = z.infer<typeof LoraSpecSchema>;

/** Width of the MLP hidden layer. */
export function mlpWidth(cfg: ModelConfig): number {
  return cfg.dModel * cfg.mlpRatio;
}

/** Width of one attention head. */
export function headWidth(cfg: ModelConfig): number {
  return cfg.dModel / cfg.nHeads;
}
