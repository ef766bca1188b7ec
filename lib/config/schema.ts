/**
 * The training configuration: one zod schema for every method (`rl`, `opd`, `combine`), nested
 * by concern. Every field carries a one-line `.describe()` text, read at runtime by
 * {@link listConfigFields} (`./fields.ts`), `--help` and the docs. The names the seeds use
 * (OpenClaw's, GEM's, OpenReward's, the flat keys of earlier versions) are in `./aliases.ts`.
 * Settings the run-management API shows carry `.meta(runApi(...))` (`./run_api.ts`): its fields
 * are derived from them, so each default, range and choice is written here once.
 *
 * @module
 */

import { z } from "zod";
import { type AdvantageConfig, AdvantageConfigSchema, rewardSetting } from "../advantages/mod.ts";
import { HELD_OUT_ENV_SEEDS } from "../util/random.ts";
import { defaultLearningRate } from "../models/table.ts";
import { runApi } from "./run_api.ts";

export type { RunApiMeta } from "./run_api.ts";

const int = () => z.number().int();

// Every numeric setting has a range, here and nowhere else: the CLI, a config file and the run
// API all check values with this schema. The shared bounds:
/** Training steps (and step counts) a run can ask for. */
const MAX_STEPS = 1_000_000;
/** Tokens: a million is past every served model's context. */
const MAX_TOKENS = 1_048_576;
/** Wall-clock limits in seconds: a week. */
const WEEK_S = 7 * 24 * 3600;
const advantage = AdvantageConfigSchema.shape;

/** The base model when none is named: the embedded backend's games model (models/README.md). */
export const DEFAULT_MODEL = "local/games2";

/** The policy being trained. */
export const PolicySchema: z.ZodObject<
  {
    model: z.ZodDefault<z.ZodString>;
    lora_rank: z.ZodDefault<z.ZodNumber>;
    tokenizer: z.ZodDefault<z.ZodNullable<z.ZodString>>;
    thinking: z.ZodDefault<z.ZodBoolean>;
    renderer: z.ZodDefault<z.ZodNullable<z.ZodString>>;
  },
  z.core.$strict
> = z.object({
  model: z.string().min(1).default(DEFAULT_MODEL).describe(
    "Base model of the LoRA policy: local/* on the embedded backend, others on Tinker (TINKER_API_KEY)",
  ).meta(runApi({ name: "model_name" })),
  lora_rank: int().min(1).max(1024).default(32).describe("Rank of the LoRA adapter")
    .meta(runApi({ name: "lora_rank" })),
  tokenizer: z.string().min(1).nullable().default(null).describe(
    "Tokenizer and chat format to render with, when not the model's (e.g. Qwen/Qwen3-8B); null: the model's",
  ),
  thinking: z.boolean().default(false).describe(
    "Qwen3's enable_thinking: the policy may reason in a think block before answering",
  ),
  renderer: z.string().min(1).nullable().default(null).describe(
    "Chat renderer by name (e.g. llama3, qwen3_instruct, role_colon; `deno task models`); null: the model table's",
  ),
}).strict();

/** The optimizer and the loss. */
export const OptimizerSchema: z.ZodObject<
  {
    learning_rate: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    loss_fn: z.ZodDefault<
      z.ZodEnum<
        { importance_sampling: "importance_sampling"; ppo: "ppo"; cispo: "cispo"; dro: "dro" }
      >
    >;
    loss_fn_config: z.ZodDefault<z.ZodRecord<z.ZodString, z.ZodNumber>>;
    train_epochs: z.ZodDefault<z.ZodNumber>;
    weight_decay: z.ZodDefault<z.ZodNumber>;
  },
  z.core.$strict
> = z.object({
  learning_rate: z.number().positive().max(1).nullable().default(null).describe(
    "Adam's learning rate; null: 1e-4 (OpenClaw's) on cloud models, 1e-3 on local/* models",
  ).meta(runApi({ name: "learning_rate" })),
  loss_fn: z.enum(["importance_sampling", "ppo", "cispo", "dro"]).default("importance_sampling")
    .describe("Tinker's RL loss (all four run on the local backend too)")
    .meta(runApi({ name: "loss_fn" })),
  loss_fn_config: z.record(z.string(), z.number().min(-1e6).max(1e6)).default({}).describe(
    "The loss's settings, e.g. clip_low_threshold / clip_high_threshold (ppo, cispo), beta (dro); empty: the server's defaults",
  ),
  train_epochs: int().min(1).max(100).default(1).describe(
    "forward_backward + optim_step passes over each step's batch",
  ).meta(runApi({ name: "train_epochs" })),
  weight_decay: z.number().min(0).max(1).default(0).describe("Adam's decoupled weight decay"),
}).strict();

/** Collecting episodes: the environment, the batch, sampling and failures. */
export const RolloutSchema: z.ZodObject<
  {
    env_id: z.ZodDefault<z.ZodString>;
    env_module: z.ZodDefault<z.ZodNullable<z.ZodString>>;
    groups_per_batch: z.ZodDefault<z.ZodNumber>;
    group_size: z.ZodDefault<z.ZodNumber>;
    max_concurrency: z.ZodDefault<z.ZodNumber>;
    max_tokens_per_turn: z.ZodDefault<z.ZodNumber>;
    max_tokens_per_episode: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    max_total_tokens: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    temperature: z.ZodDefault<z.ZodNumber>;
    timeout_s: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    on_error: z.ZodDefault<
      z.ZodEnum<{ retry: "retry"; drop_episode: "drop_episode"; drop_group: "drop_group" }>
    >;
    max_retries: z.ZodDefault<z.ZodNumber>;
    system_prompt_template: z.ZodDefault<z.ZodNullable<z.ZodString>>;
    invalid_tool_call_reward: z.ZodDefault<z.ZodNumber>;
    on_invalid_tool_call: z.ZodDefault<z.ZodEnum<{ continue: "continue"; end: "end" }>>;
    template: z.ZodDefault<
      z.ZodEnum<
        { chat: "chat"; qwen3_game: "qwen3_game"; qwen3_general: "qwen3_general"; no: "no" }
      >
    >;
    env_wrappers: z.ZodDefault<z.ZodString>;
  },
  z.core.$strict
> = z.object({
  env_id: z.string().min(1).default("game:GuessTheNumber-v0-easy").describe(
    "Environment id in the registry (GEM's ids, e.g. game:GuessTheNumber-v0-easy)",
  ).meta(runApi({
    name: "environment",
    key: "env_id",
    locked: "set by POST /environments/{name}/select (rl_select_environment)",
  })),
  env_module: z.string().min(1).nullable().default(null).describe(
    "A module imported before the environment is made (e.g. ./my_env.ts), which registers it",
  ).meta(runApi({ name: "env_module", locked: "follows the selected environment" })),
  groups_per_batch: int().min(1).max(4096).default(4).describe(
    "GRPO groups collected per training step (OpenClaw's, OpenReward's batch_size)",
  ).meta(runApi({ name: "batch_size" })),
  group_size: int().min(1).max(1024).default(4).describe(
    "Episodes per group, all from the same start state",
  ).meta(runApi({ name: "group_size" })),
  max_concurrency: int().min(1).max(4096).default(32).describe(
    "Episodes in flight at once, at most (the local backend batches concurrent sampling); " +
      "OpenReward's max_active_tasks and max_rollout_concurrency given together: the lower",
  ).meta(runApi({ name: "max_num_workers", key: "num_env" })),
  max_tokens_per_turn: int().min(1).max(MAX_TOKENS).default(256).describe(
    "Sampled tokens per turn at most",
  )
    .meta(runApi({ name: "max_token_length", key: "max_tokens" })),
  max_tokens_per_episode: int().min(1).max(MAX_TOKENS).nullable().default(null).describe(
    "Action tokens per episode over all its turns; null: only the per-turn limit",
  ),
  max_total_tokens: int().min(1).max(MAX_TOKENS).nullable().default(null).describe(
    "Tokens of an episode's whole conversation, prompt included; null: the model's context " +
      "(an episode that fills it ends unsolved)",
  ),
  temperature: z.number().min(0).max(10).default(1).describe(
    "Sampling temperature of rollouts and of the held-out evaluation",
  ).meta(runApi({ name: "temperature" })),
  timeout_s: z.number().positive().max(WEEK_S).nullable().default(null).describe(
    "Wall-clock limit per episode in seconds; null: none",
  ),
  on_error: z.enum(["retry", "drop_episode", "drop_group"]).default("retry").describe(
    "A failed episode (error or timeout): retry it with a fresh seed, drop it, or drop its group",
  ),
  max_retries: int().min(0).max(100).default(2).describe(
    "Retries of a failed episode under on_error=retry",
  ),
  system_prompt_template: z.string().min(1).nullable().default(null).describe(
    "System prompt of tool environments, {tools} standing for one JSON line per tool; null: Qwen3's tool section",
  ),
  invalid_tool_call_reward: rewardSetting().default(0).describe(
    "Reward of a turn whose tool call does not parse",
  ),
  on_invalid_tool_call: z.enum(["continue", "end"]).default("continue").describe(
    "A tool call that does not parse: continue (a corrective message, OpenReward's trainer) or end the episode (tinker-cookbook's terminate_on_parse_error)",
  ),
  template: z.enum(["chat", "qwen3_game", "qwen3_general", "no"]).default("chat").describe(
    "How observations become prompts: chat (the model's chat renderer) or GEM's single-prompt templates",
  ),
  env_wrappers: z.string().default("").describe(
    "GEM's observation wrappers, comma-separated (concat, concat_with_action, concat_chat); empty: none",
  ),
}).strict();

/** The advantage pipeline (see lib/advantages), GEM's gamma and ReBN included. */
export const AdvantagesSchema: z.ZodObject<
  {
    mode: z.ZodDefault<
      z.ZodEnum<
        {
          raw: "raw";
          group_centered: "group_centered";
          group_zscore: "group_zscore";
          batch_zscore: "batch_zscore";
          discounted: "discounted";
          discounted_rebn: "discounted_rebn";
          group_discounted: "group_discounted";
        }
      >
    >;
    gamma: z.ZodDefault<z.ZodNumber>;
    constant_groups: z.ZodDefault<
      z.ZodEnum<{ keep: "keep"; drop: "drop"; drop_keep_one: "drop_keep_one" }>
    >;
    downsample_to: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    reward_reduction: z.ZodDefault<z.ZodEnum<{ sum: "sum"; mean: "mean"; max: "max"; min: "min" }>>;
    non_final_turn_reward: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    clamp_min: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    clamp_max: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    eps: z.ZodDefault<z.ZodNumber>;
  },
  z.core.$strict
> = z.object({
  mode: advantage.mode.describe(
    "How advantages are computed (table in lib/advantages); discounted_rebn is GEM's ReBN",
  ),
  gamma: advantage.gamma.describe("Discount of the discounted modes"),
  constant_groups: advantage.constantGroups.describe(
    "Groups whose episodes all have the same reward: keep them, drop them, or drop them but one if all are",
  ),
  downsample_to: advantage.downsampleTo.describe(
    "Train on this many episodes of each group, those whose rewards vary most (PODS: sample more than you train on); null: all",
  ),
  reward_reduction: advantage.rewardReduction.describe(
    "How a multi-turn episode's turn rewards become its reward",
  ),
  non_final_turn_reward: advantage.nonFinalTurnReward.describe(
    "Replaces the reward of every turn before the last (e.g. 0: only the outcome counts); null: keep",
  ),
  clamp_min: advantage.clampMin.describe("Lower clamp of the final advantages; null: none"),
  clamp_max: advantage.clampMax.describe("Upper clamp of the final advantages; null: none"),
  eps: advantage.eps.describe("Added to the standard deviation of z-scores"),
}).strict().refine(
  (a) => a.clamp_min === null || a.clamp_max === null || a.clamp_min <= a.clamp_max,
  { message: "clamp_min must not exceed clamp_max", path: ["clamp_min"] },
);

/** Turning episodes into per-token advantages: the method and its terms. */
export const ScoringSchema: z.ZodObject<
  {
    method: z.ZodDefault<z.ZodEnum<{ rl: "rl"; opd: "opd"; combine: "combine" }>>;
    rl_reward: z.ZodDefault<z.ZodEnum<{ success: "success"; env: "env"; prm: "prm" }>>;
    opd_hint: z.ZodDefault<z.ZodEnum<{ judge: "judge"; next_observation: "next_observation" }>>;
    w_opd: z.ZodDefault<z.ZodNumber>;
    w_rl: z.ZodDefault<z.ZodNumber>;
    kl_loss_coef: z.ZodDefault<z.ZodNumber>;
    eval_mode: z.ZodDefault<z.ZodBoolean>;
    worse_teacher_frac: z.ZodDefault<z.ZodNumber>;
    worse_teacher_steps: z.ZodDefault<z.ZodNumber>;
  },
  z.core.$strict
> = z.object({
  method: z.enum(["rl", "opd", "combine"]).default("rl").describe(
    "rl (rewards), opd (teacher − student per token, with a hindsight hint), or combine (both)",
  ).meta(runApi({ name: "method" })),
  rl_reward: z.enum(["env", "success", "prm"]).default("env").describe(
    "The RL term's turn rewards: the environment's, its success part (1 solved, penalties kept, partial credit 0), or PRM judge votes",
  ),
  opd_hint: z.enum(["judge", "next_observation"]).default("next_observation").describe(
    "OPD's hindsight hint: written by the hint judge, or the turn's next observation",
  ),
  w_opd: z.number().min(0).max(100).default(1).describe("Weight of the OPD term (opd, combine)")
    .meta(runApi({ name: "w_opd" })),
  w_rl: z.number().min(0).max(100).default(1).describe("Weight of the RL term (combine)")
    .meta(runApi({ name: "w_rl" })),
  kl_loss_coef: z.number().min(0).max(100).default(0).describe(
    "Adds −coef · (student_lp − base_lp) per token (a KL penalty towards the teacher / base)",
  ).meta(runApi({ name: "kl_loss_coef" })),
  eval_mode: z.boolean().default(false).describe(
    "With opd: also run the PRM judge, for monitoring only",
  ),
  worse_teacher_frac: z.number().min(0.5).max(1).default(0.9).describe(
    "opd, combine: a step whose OPD tokens have teacher − student < 0 at least this often shows a teacher worse than the student (lib/scoring/teacher_check.ts)",
  ),
  worse_teacher_steps: int().min(0).max(1000).default(3).describe(
    "opd, combine: that many such steps in a row stop the run, before OPD collapses the policy; 0: never stop",
  ),
}).strict();

/** The PRM and hint judge. */
export const JudgeSchema: z.ZodObject<
  {
    votes: z.ZodDefault<z.ZodNumber>;
    temperature: z.ZodDefault<z.ZodNumber>;
    max_tokens: z.ZodDefault<z.ZodNumber>;
    base_url: z.ZodDefault<z.ZodNullable<z.ZodURL>>;
    model: z.ZodDefault<z.ZodNullable<z.ZodString>>;
  },
  z.core.$strict
> = z.object({
  votes: int().min(1).max(64).default(3).describe("PRM judge votes per turn (OpenClaw's M)"),
  temperature: z.number().min(0).max(10).default(0.6).describe("Sampling temperature of the judge"),
  max_tokens: int().min(1).max(MAX_TOKENS).default(4096).describe(
    "Tokens per judge answer at most",
  ),
  base_url: z.url().nullable().default(null).describe(
    "An OpenAI-compatible judge (…/v1, key in JUDGE_API_KEY); null: the teacher model on Tinker",
  ),
  model: z.string().min(1).nullable().default(null).describe(
    "Model name to ask the OpenAI-compatible judge for; null: the teacher model",
  ),
}).strict();

/** The teacher of OPD (and the judge's model on Tinker). */
export const TeacherSchema: z.ZodObject<
  { model: z.ZodDefault<z.ZodNullable<z.ZodString>> },
  z.core.$strict
> = z.object({
  model: z.string().min(1).nullable().default(null).describe(
    "Teacher (and Tinker judge) model; null: the policy's base model",
  ),
}).strict();

/** Where the run is recorded. */
export const LoggingSchema: z.ZodObject<
  {
    log_path: z.ZodDefault<z.ZodNullable<z.ZodString>>;
    project_name: z.ZodDefault<z.ZodNullable<z.ZodString>>;
    run_name: z.ZodDefault<z.ZodNullable<z.ZodString>>;
    use_wandb: z.ZodDefault<z.ZodNullable<z.ZodBoolean>>;
    openreward_run_name: z.ZodDefault<z.ZodNullable<z.ZodString>>;
  },
  z.core.$strict
> = z.object({
  log_path: z.string().min(1).nullable().default(null).describe(
    "Run directory (config, metrics, checkpoints, rollouts); null: .tinkerbench/runs/<method>-<env>-<model>-seed<N>",
  ).meta(
    runApi({ name: "log_path", locked: "each run gets its own directory under the data dir" }),
  ),
  project_name: z.string().min(1).nullable().default(null).describe(
    "W&B project of the run; null: WANDB_PROJECT, else tinkerbench (docs/tracking.md)",
  ),
  run_name: z.string().min(1).nullable().default(null).describe(
    "Run label and W&B display name; null: the run directory's name",
  ),
  use_wandb: z.boolean().nullable().default(null).describe(
    "Log the run to W&B: null when WANDB_API_KEY is set, false never, true requires the key",
  ),
  openreward_run_name: z.string().min(1).nullable().default(null).describe(
    "Run name of trajectories uploaded to OpenReward (with OPENREWARD_API_KEY); null: the run label or directory name",
  ),
}).strict();

/** The held-out evaluation at the end of a run. */
export const EvalSchema: z.ZodObject<
  { episodes: z.ZodDefault<z.ZodNumber>; env_id: z.ZodDefault<z.ZodNullable<z.ZodString>> },
  z.core.$strict
> = z.object({
  episodes: int().min(0).max(HELD_OUT_ENV_SEEDS.count).default(64).describe(
    `Held-out episodes (env seeds ${HELD_OUT_ENV_SEEDS.first}+, never trained on) played by the base model and by the trained policy after the last step, and by each checkpoint the run API evaluates; 0: none`,
  ).meta(runApi({ name: "eval_episodes", key: "eval.episodes", default: 32 })),
  env_id: z.string().min(1).nullable().default(null).describe(
    "Proxy runs only: the environment their held-out evaluation plays, the one their agents play (e.g. game:GuessTheNumber-v0-easy); null: none. An environment run plays its own",
  ),
}).strict();

/** Saving and starting from states. */
export const CheckpointsSchema: z.ZodObject<
  { save_every: z.ZodDefault<z.ZodNumber>; resume_from: z.ZodDefault<z.ZodNullable<z.ZodString>> },
  z.core.$strict
> = z.object({
  save_every: int().min(0).max(MAX_STEPS).default(20).describe(
    "Save the state every N steps (0: only at the end or on Ctrl-C); the run API evaluates each checkpoint",
  ).meta(runApi({ name: "steps_per_eval", key: "save_interval", default: 25 })),
  resume_from: z.string().min(1).nullable().default(null).describe(
    "Start a new run from these weights (tinker://…, weights only); a run directory resumes by itself",
  ),
}).strict();

/** How sampling and training are scheduled against each other (docs/async.md). */
export const PipelineSchema: z.ZodObject<
  {
    mode: z.ZodDefault<z.ZodEnum<{ sync: "sync"; stream: "stream"; async: "async" }>>;
    num_minibatches: z.ZodDefault<z.ZodNumber>;
    max_steps_off_policy: z.ZodDefault<z.ZodNumber>;
    max_steps_without_datums: z.ZodDefault<z.ZodNumber>;
  },
  z.core.$strict
> = z.object({
  mode: z.enum(["sync", "stream", "async"]).default("sync").describe(
    "sync: sample the batch, then train; stream: train each minibatch as soon as its groups are in; async: keep sampling while training",
  ),
  num_minibatches: int().min(1).max(4096).default(1).describe(
    "stream: forward_backward passes a step's groups are split into, each sent when ready",
  ),
  max_steps_off_policy: int().min(0).max(1000).default(1).describe(
    "async and proxy: most optimizer steps between the weights that sampled a group (a turn) and the step that trains it",
  ),
  max_steps_without_datums: int().min(1).max(MAX_STEPS).default(5).describe(
    "Steps in a row with nothing to train (steps whose groups all solved their tasks aside) before the run stops as failed",
  ).meta(runApi({ name: "max_steps_without_datums", key: "pipeline.max_steps_without_datums" })),
}).strict();

/** An OpenAI-compatible proxy in front of the policy (OpenClaw's); null: none. */
export const ProxySchema: z.ZodObject<
  {
    host: z.ZodDefault<z.ZodString>;
    port: z.ZodDefault<z.ZodNumber>;
    served_model_name: z.ZodDefault<z.ZodNullable<z.ZodString>>;
    default_turn_type: z.ZodDefault<z.ZodEnum<{ main: "main"; side: "side" }>>;
    session_idle_s: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    session_binding: z.ZodDefault<z.ZodEnum<{ token: "token"; history: "history" }>>;
    reward_bound: z.ZodDefault<z.ZodNumber>;
    max_sessions: z.ZodDefault<z.ZodNumber>;
    late_reward_s: z.ZodDefault<z.ZodNumber>;
    truncate_keep_head: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    pause_during_step: z.ZodDefault<z.ZodBoolean>;
    pause_timeout_s: z.ZodDefault<z.ZodNumber>;
  },
  z.core.$strict
> = z.object({
  host: z.string().min(1).default("0.0.0.0").describe(
    "Address the proxy listens on (the seed's 0.0.0.0: every interface; set an API key, or 127.0.0.1)",
  ),
  port: int().min(0).max(65535).default(30000).describe("Port of the proxy (0: a free one)"),
  served_model_name: z.string().min(1).nullable().default(null).describe(
    "Model name clients ask the proxy for; null: the policy's model",
  ),
  default_turn_type: z.enum(["main", "side"]).default("main").describe(
    "Turn type of requests without X-Turn-Type: main turns are trained, side turns are not",
  ),
  session_idle_s: z.number().positive().max(WEEK_S).nullable().default(600).describe(
    "A session idle this long ends, its last turn without a next state (OpenClaw never says done); null: never",
  ),
  session_binding: z.enum(["token", "history"]).default("token").describe(
    "How a request without its session's X-Session-Token continues it: token (never: it opens a new session) or history (when it carries the session's label and extends its conversation; for agents that cannot send the token back)",
  ),
  reward_bound: z.number().positive().max(1e6).default(100).describe(
    "Largest reward magnitude a client may send (X-Turn-Reward, body reward, /done); beyond it, or not finite, is a 400",
  ),
  max_sessions: int().min(1).max(1_000_000).default(1024).describe(
    "Most open sessions (each holds its last turn, about 100 KB); a request that would open one more is a 429 naming this setting",
  ),
  late_reward_s: z.number().min(0).max(86_400).default(30).describe(
    "How long a session that ended (idle, X-Session-Done) keeps its unrewarded last turn for a late /done reward; 0: none",
  ),
  truncate_keep_head: int().min(0).max(1_000_000).nullable().default(null).describe(
    "Opt-in cut of a prompt over the model's context: keep this many tokens from its start (the system prompt's head) and the newest tokens, leaving rollout.max_tokens_per_turn for the answer; each cut is recorded on the turn (truncated_tokens). null: off, such a prompt is a 400 context_length_exceeded",
  ),
  pause_during_step: z.boolean().default(false).describe(
    "The seed's mode: requests wait while a training step runs (503 after pause_timeout_s); false: served by the current sampler",
  ),
  pause_timeout_s: z.number().positive().max(WEEK_S).default(300).describe(
    "How long a request waits for a paused step before a 503",
  ),
}).strict();

/** A split of an environment's tasks in a multi-environment run. */
export const SplitEntrySchema: z.ZodObject<
  { shuffle: z.ZodDefault<z.ZodBoolean>; num_samples: z.ZodDefault<z.ZodNullable<z.ZodNumber>> },
  z.core.$strict
> = z.object({
  shuffle: z.boolean().default(true).describe("Shuffle the split's tasks (with the run's seed)"),
  num_samples: int().min(1).max(1e9).nullable().default(null).describe(
    "Tasks taken from the split (after shuffling); null: all",
  ),
}).strict();

const secretsMap = () => z.record(z.string().min(1), z.string().nullable());

/** One environment of a multi-environment run (OpenReward's keys, plus env_id, base_url, weight). */
export const EnvironmentEntrySchema: z.ZodObject<
  {
    env_id: z.ZodDefault<z.ZodNullable<z.ZodString>>;
    base_url: z.ZodDefault<z.ZodNullable<z.ZodURL>>;
    weight: z.ZodDefault<z.ZodNumber>;
    splits: z.ZodDefault<z.ZodRecord<z.ZodString, typeof SplitEntrySchema>>;
    num_rollouts: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    max_failing_rollouts: z.ZodDefault<z.ZodNumber>;
    temperature: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    top_p: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    top_k: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    reward_reduction: z.ZodDefault<z.ZodEnum<{ sum: "sum"; mean: "mean"; max: "max"; min: "min" }>>;
    unfinished_reward: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    min_reward: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    max_reward: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    max_turns: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    secrets: z.ZodDefault<z.ZodNullable<z.ZodRecord<z.ZodString, z.ZodNullable<z.ZodString>>>>;
  },
  z.core.$strict
> = z.object({
  env_id: z.string().min(1).nullable().default(null).describe(
    "Environment id in the registry; null: the entry's name when registered",
  ),
  base_url: z.url().nullable().default(null).describe(
    "An ORS server that serves this environment under the entry's name (e.g. deno task envs serve)",
  ),
  weight: z.number().positive().max(1e6).default(1).describe(
    "Relative share of each step's groups drawn from this environment",
  ),
  splits: z.record(z.string().min(1), SplitEntrySchema).default({
    train: { shuffle: true, num_samples: null },
  }).describe("Splits whose tasks are drawn, with their sampling"),
  num_rollouts: int().min(2).max(1024).nullable().default(null).describe(
    "Episodes per task group (at least 2); null: rollout.group_size",
  ),
  max_failing_rollouts: int().min(0).max(1024).default(0).describe(
    "A group with more failed episodes is left out; fewer are dropped from it",
  ),
  temperature: z.number().min(0).max(2).nullable().default(null).describe(
    "Sampling temperature; null: rollout.temperature",
  ),
  top_p: z.number().min(0).max(1).nullable().default(null).describe("Nucleus sampling; null: off"),
  top_k: int().min(0).max(1_000_000).nullable().default(null).describe(
    "Top-k sampling; null or 0: off",
  ),
  reward_reduction: z.enum(["sum", "mean", "max", "min"]).default("sum").describe(
    "How an episode's tool rewards become its reward",
  ),
  unfinished_reward: rewardSetting().nullable().default(null).describe(
    "Added to the rewards of an episode that did not finish; null: none",
  ),
  min_reward: rewardSetting().nullable().default(null).describe("Lower clamp of episode rewards"),
  max_reward: rewardSetting().nullable().default(null).describe("Upper clamp of episode rewards"),
  max_turns: int().min(1).max(10_000).nullable().default(null).describe(
    "Turn limit of an episode; null: the environment's (32 for an ORS server's)",
  ),
  secrets: secretsMap().nullable().default(null).describe(
    "This environment's session secrets, over the top-level ones; null: the top-level ones",
  ),
}).strict().refine(
  (e) => e.min_reward === null || e.max_reward === null || e.min_reward <= e.max_reward,
  { message: "min_reward must not exceed max_reward", path: ["min_reward"] },
);
/** Every setting of a training run, with its default. */
export const TrainConfigSchema: z.ZodObject<
  {
    max_steps: z.ZodDefault<z.ZodNumber>;
    num_epochs: z.ZodDefault<z.ZodNullable<z.ZodNumber>>;
    seed: z.ZodDefault<z.ZodNumber>;
    policy: z.ZodPrefault<typeof PolicySchema>;
    optimizer: z.ZodPrefault<typeof OptimizerSchema>;
    rollout: z.ZodPrefault<typeof RolloutSchema>;
    advantages: z.ZodPrefault<typeof AdvantagesSchema>;
    scoring: z.ZodPrefault<typeof ScoringSchema>;
    judge: z.ZodPrefault<typeof JudgeSchema>;
    teacher: z.ZodPrefault<typeof TeacherSchema>;
    logging: z.ZodPrefault<typeof LoggingSchema>;
    eval: z.ZodPrefault<typeof EvalSchema>;
    checkpoints: z.ZodPrefault<typeof CheckpointsSchema>;
    pipeline: z.ZodPrefault<typeof PipelineSchema>;
    proxy: z.ZodDefault<z.ZodNullable<typeof ProxySchema>>;
    environments: z.ZodDefault<z.ZodRecord<z.ZodString, typeof EnvironmentEntrySchema>>;
    secrets: z.ZodDefault<z.ZodRecord<z.ZodString, z.ZodNullable<z.ZodString>>>;
  },
  z.core.$strict
> = z.object({
  max_steps: int().min(1).max(MAX_STEPS).default(1000).describe("Training steps of the run")
    .meta(runApi({ name: "total_steps", key: "max_steps", default: 50 })),
  num_epochs: int().min(1).max(10_000).nullable().default(null).describe(
    "With environments: passes over their tasks, num_epochs × (tasks ÷ groups per batch) steps instead of max_steps",
  ),
  seed: int().min(0).max(2 ** 32 - 1).default(0).describe(
    "Seed of the LoRA init, environments and sampling (each a function of seed, step, group)",
  ).meta(runApi({ name: "seed" })),
  policy: PolicySchema.prefault({}).describe("The policy being trained"),
  optimizer: OptimizerSchema.prefault({}).describe("Adam, the loss and the passes per batch"),
  rollout: RolloutSchema.prefault({}).describe(
    "Collecting episodes: the environment, the batch, sampling and failures",
  ),
  advantages: AdvantagesSchema.prefault({}).describe(
    "From rewards to per-turn advantages (lib/advantages)",
  ),
  scoring: ScoringSchema.prefault({}).describe("The method and the terms of the advantage"),
  judge: JudgeSchema.prefault({}).describe("The PRM and hint judge"),
  teacher: TeacherSchema.prefault({}).describe("The teacher of OPD"),
  logging: LoggingSchema.prefault({}).describe("Where the run is recorded"),
  eval: EvalSchema.prefault({}).describe("The held-out evaluation of the base and trained policy"),
  checkpoints: CheckpointsSchema.prefault({}).describe("Saving and starting from states"),
  pipeline: PipelineSchema.prefault({}).describe(
    "Scheduling of sampling and training: sync, stream (minibatches) or async (off-policy)",
  ),
  proxy: ProxySchema.nullable().default(null).describe(
    "An OpenAI-compatible proxy serving the policy (OpenClaw's); null: none. Setting any field turns it on",
  ),
  environments: z.record(z.string().min(1), EnvironmentEntrySchema).default({}).describe(
    "Environments of a multi-environment run by name (a registry id, an ORS server's name with base_url, or Org/Env on OpenReward); empty: rollout.env_id alone",
  ),
  secrets: secretsMap().default({}).describe(
    "Secrets for environment sessions by name; null: the environment variable of the upper-cased name",
  ),
}).strict().superRefine((cfg, ctx) => {
  // Down-sampling chooses by reward, within a group larger than what it keeps.
  const m = cfg.advantages.downsample_to;
  const tooSmall = (n: number, what: string) => {
    if (m !== null && m >= n) {
      ctx.addIssue({
        code: "custom",
        path: ["advantages", "downsample_to"],
        message: `must be less than ${what} (${n}): sample more episodes per group than you ` +
          `train on, e.g. --group-size ${2 * m}`,
      });
    }
  };
  if (m !== null && cfg.scoring.method === "opd") {
    ctx.addIssue({
      code: "custom",
      path: ["advantages", "downsample_to"],
      message:
        "chooses episodes by reward, and --method opd trains on none: unset it, or use rl or combine",
    });
  }
  if (Object.keys(cfg.environments).length === 0) {
    tooSmall(cfg.rollout.group_size, "rollout.group_size");
  }
  // OpenReward's rules, with num_rollouts defaulting to the group size.
  for (const [name, e] of Object.entries(cfg.environments)) {
    const n = e.num_rollouts ?? cfg.rollout.group_size;
    tooSmall(
      n,
      e.num_rollouts === null
        ? `rollout.group_size (environment ${name})`
        : `environments.${name}.num_rollouts`,
    );
    const path = [
      "environments",
      name,
      e.num_rollouts === null ? "max_failing_rollouts" : "num_rollouts",
    ];
    if (n < 2) {
      ctx.addIssue({
        code: "custom",
        path: ["environments", name, "num_rollouts"],
        message: `num_rollouts must be at least 2 (it is rollout.group_size = ${n} when not set)`,
      });
    } else if (n - e.max_failing_rollouts < 2) {
      ctx.addIssue({
        code: "custom",
        path,
        message:
          `num_rollouts - max_failing_rollouts must be >= 2 (${n} - ${e.max_failing_rollouts})`,
      });
    }
  }
});

/** A full training configuration. */
export type TrainConfig = z.infer<typeof TrainConfigSchema>;

/** The learning rate a run uses: the configured one, or the model table's default. */
export function resolveLearningRate(cfg: TrainConfig): number {
  return cfg.optimizer.learning_rate ?? defaultLearningRate(cfg.policy.model);
}

/**
 * The advantage pipeline's settings (lib/advantages) from the config's section.
 *
 * @example
 * computeAdvantages(groups, advantageConfig(cfg.advantages));
 */
export function advantageConfig(a: TrainConfig["advantages"]): AdvantageConfig {
  return {
    mode: a.mode,
    gamma: a.gamma,
    constantGroups: a.constant_groups,
    downsampleTo: a.downsample_to,
    rewardReduction: a.reward_reduction,
    nonFinalTurnReward: a.non_final_turn_reward,
    clampMin: a.clamp_min,
    clampMax: a.clamp_max,
    eps: a.eps,
  };
}
