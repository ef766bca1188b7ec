/**
 * The training configuration: one zod schema for every method (`rl`, `opd`, `combine`) with the
 * OpenClaw seed's settings, the GEM seed's, and the advantage pipeline as a nested section.
 *
 * @module
 */

import { z } from "zod";
import { AdvantageConfigSchema } from "../advantages/mod.ts";

const int = () => z.number().int();

/** Every setting of a training run, with its default. */
export const TrainConfigSchema = z.object({
  // ---- OpenClaw seed ----
  method: z.enum(["rl", "opd", "combine"]).default("rl"),
  /** The policy; local models need no key, cloud ones need TINKER_API_KEY. */
  model_name: z.string().min(1).default("local/games"),
  lora_rank: int().min(1).max(1024).default(32),
  /** The teacher of OPD and the judge's model; null means the policy's base model. */
  teacher_model_name: z.string().min(1).nullable().default(null),
  /**
   * Adam's learning rate; null picks one for the model: 1e-4 (OpenClaw's) for cloud models,
   * 3e-3 for the small local models, whose LoRA needs a larger step (see resolveLearningRate).
   */
  learning_rate: z.number().positive().max(1).nullable().default(null),
  /** Groups (or proxy turns) per training step. */
  batch_size: int().min(1).default(4),
  max_steps: int().min(1).default(1000),
  loss_fn: z.enum(["importance_sampling", "ppo", "cispo"]).default("importance_sampling"),
  kl_loss_coef: z.number().min(0).default(0),
  /** Save a checkpoint every N steps (0: only the final one). GEM's `save_every` is an alias. */
  save_interval: int().min(0).default(20),
  resume_from_ckpt: z.string().min(1).nullable().default(null),
  /** Weight of the OPD term in `combine`. */
  w_opd: z.number().min(0).default(1),
  /** Weight of the RL term in `combine`. */
  w_rl: z.number().min(0).default(1),
  /** Train on each batch this many times. */
  train_epochs: int().min(1).default(1),
  /** With `opd`: also run the PRM judge, for monitoring only. */
  eval_mode: z.boolean().default(false),
  /** PRM judge votes per turn, and their sampling. */
  prm_m: int().min(1).default(3),
  prm_temperature: z.number().min(0).default(0.6),
  prm_max_tokens: int().min(1).default(4096),
  /** Where the RL term's turn rewards come from: the env's own reward, or PRM votes. */
  reward_source: z.enum(["env", "prm"]).default("env"),
  /**
   * Where OPD's hindsight hint comes from: the hint judge, or the turn's next observation
   * itself (in a game, the feedback on the move: the hindsight a judge would extract).
   */
  hint_source: z.enum(["judge", "next_observation"]).default("next_observation"),
  /** An OpenAI-compatible judge (`…/v1`); null: the teacher model on Tinker judges. */
  judge_base_url: z.string().url().nullable().default(null),
  /** The model name to ask the OpenAI-compatible judge for. */
  judge_model: z.string().min(1).nullable().default(null),
  // ---- GEM seed ----
  env_id: z.string().min(1).default("game:GuessTheNumber-v0-easy"),
  /**
   * Episodes played at once (GEM's num_env; its default is 4, ours 32 because the local
   * backend batches concurrent sampling requests).
   */
  num_env: int().min(1).default(32),
  /** A failed rollout (an error or a timeout): retry it with a fresh seed, or drop it / its group. */
  rollout_on_error: z.enum(["retry", "drop_episode", "drop_group"]).default("retry"),
  /** Wall-clock limit per episode in seconds (null: none). */
  rollout_timeout_s: z.number().positive().nullable().default(null),
  /** Action tokens per episode over all its turns (null: only the per-turn max_tokens). */
  max_tokens_per_episode: int().min(1).nullable().default(null),
  /** Episodes per group, from the same start state (GRPO). */
  group_size: int().min(1).default(4),
  gamma: z.number().min(0).max(1).default(0.9),
  use_rebn: z.boolean().default(true),
  /**
   * How observations become prompts. GEM's hand-written templates (`qwen3_game`, ...) are not
   * offered: turns go through the model's chat renderer, so prompts stay token-aligned.
   */
  template: z.enum(["chat"]).default("chat"),
  max_tokens: int().min(1).default(256),
  /** Sampling temperature of rollouts. */
  temperature: z.number().min(0).default(1),
  seed: int().default(0),
  // ---- run ----
  /** Where metrics, checkpoints.jsonl and the rollout store go. */
  log_path: z.string().min(1).nullable().default(null),
  advantages: AdvantageConfigSchema.default(AdvantageConfigSchema.parse({})),
}).strict();

/** The learning rate a run uses: the configured one, or the model's default. */
export function resolveLearningRate(
  cfg: { learning_rate: number | null; model_name: string },
): number {
  return cfg.learning_rate ?? (cfg.model_name.startsWith("local/") ? 3e-3 : 1e-4);
}

/** A full training configuration. */
export type TrainConfig = z.infer<typeof TrainConfigSchema>;

/** Keys that another name also sets (the GEM seed's names). */
export const CONFIG_ALIASES: Record<string, keyof TrainConfig> = { save_every: "save_interval" };

/** Environment variables of the OpenClaw seed, and the key each sets. */
export const CONFIG_ENV_VARS: Record<string, keyof TrainConfig> = {
  KL_LOSS_COEF: "kl_loss_coef",
  OPENCLAW_COMBINE_W_OPD: "w_opd",
  OPENCLAW_COMBINE_W_RL: "w_rl",
};

/** Every key also reads `TINKERBENCH_<KEY>` from the environment, e.g. `TINKERBENCH_LORA_RANK`. */
export const ENV_PREFIX = "TINKERBENCH_";

/** `TINKERBENCH_*` variables that are not training settings (the local backend's home). */
export const NON_CONFIG_ENV_VARS: ReadonlySet<string> = new Set(["TINKERBENCH_HOME"]);
