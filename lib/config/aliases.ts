/**
 * The alias table: every name the seeds (and earlier tinkerbench versions) use for a setting,
 * mapped onto its path in the nested config. An alias works in every source: a config file key,
 * a `--flag` (its kebab-case), `TINKERBENCH_<ALIAS>` in the environment, and
 * `--overrides alias=value` (or GEM's bare `alias=value` words).
 *
 * Names that are the same everywhere (`max_steps`, `seed`) need no alias.
 *
 * @module
 */

/** Who uses a name. `tinkerbench` marks the flat keys of its earlier versions. */
export type AliasSource =
  | "tinkerbench"
  | "OpenClaw"
  | "GEM"
  | "OpenReward"
  | "Hermes"
  | "tinker-cookbook";

/** One alias of a setting. */
export interface ConfigAlias {
  /** Dotted path of the setting in the nested config. */
  path: string;
  /** Who uses the name. */
  from: AliasSource[];
  /**
   * For a name whose values mean something else here: what the value becomes, and the
   * rule in words. Throws on a value it cannot translate.
   */
  value?: { rule: string; map: (v: unknown) => unknown };
  /**
   * A limit that a seed splits over two names (OpenReward's `max_active_tasks` and
   * `max_rollout_concurrency`): given beside another name of the same setting in one source,
   * the lower value wins instead of the two being refused.
   */
  lowest?: true;
  /** A name whose null meant "no limit" (it was a nullable setting): null leaves it unset. */
  nullIsUnset?: true;
}

/** A boolean from a config file value or a string of a flag, variable or override. */
export function parseBoolean(v: unknown): boolean | undefined {
  if (typeof v === "boolean") return v;
  const s = String(v).toLowerCase();
  if (["true", "1", "yes", "on"].includes(s)) return true;
  if (["false", "0", "no", "off"].includes(s)) return false;
  return undefined;
}

function boolTo(onTrue: string, onFalse: string): ConfigAlias["value"] {
  return {
    rule: `true → ${onTrue}, false → ${onFalse}`,
    map: (v) => {
      const b = parseBoolean(v);
      if (b === undefined) throw new Error(`expected true or false, got ${JSON.stringify(v)}`);
      return b ? onTrue : onFalse;
    },
  };
}

/** Every alias, by name (snake_case; dotted names are earlier versions' nested keys). */
export const CONFIG_ALIASES: Readonly<Record<string, ConfigAlias>> = {
  // ---- policy ----
  model_name: { path: "policy.model", from: ["OpenClaw", "GEM", "OpenReward", "tinker-cookbook"] },
  lora_rank: {
    path: "policy.lora_rank",
    from: ["OpenClaw", "GEM", "OpenReward", "tinker-cookbook"],
  },
  tokenizer_name: { path: "policy.tokenizer", from: ["OpenReward"] },
  thinking: { path: "policy.thinking", from: ["OpenReward"] },
  renderer: { path: "policy.renderer", from: ["tinkerbench"] },
  renderer_name: { path: "policy.renderer", from: ["tinker-cookbook"] },
  // ---- optimizer ----
  learning_rate: {
    path: "optimizer.learning_rate",
    from: ["OpenClaw", "GEM", "OpenReward", "tinker-cookbook"],
  },
  lr: { path: "optimizer.learning_rate", from: ["tinker-cookbook"] },
  loss_fn: { path: "optimizer.loss_fn", from: ["OpenClaw", "OpenReward", "tinker-cookbook"] },
  loss_fn_config: { path: "optimizer.loss_fn_config", from: ["OpenReward", "tinker-cookbook"] },
  train_epochs: { path: "optimizer.train_epochs", from: ["tinkerbench"] },
  weight_decay: { path: "optimizer.weight_decay", from: ["OpenReward"] },
  // ---- rollout ----
  env_id: { path: "rollout.env_id", from: ["GEM"] },
  env_module: { path: "rollout.env_module", from: ["tinkerbench"] },
  execution: { path: "pipeline.mode", from: ["tinkerbench"] },
  num_minibatches: { path: "pipeline.num_minibatches", from: ["tinker-cookbook"] },
  max_steps_off_policy: { path: "pipeline.max_steps_off_policy", from: ["tinker-cookbook"] },
  batch_size: {
    path: "rollout.groups_per_batch",
    // GEM's batch_size counts transitions; here (as in OpenClaw and OpenReward) it counts groups.
    from: ["OpenClaw", "GEM", "OpenReward"],
  },
  groups_per_batch: { path: "rollout.groups_per_batch", from: ["tinker-cookbook"] },
  group_size: { path: "rollout.group_size", from: ["GEM", "tinker-cookbook"] },
  num_env: { path: "rollout.max_concurrency", from: ["GEM"] },
  max_concurrency: { path: "rollout.max_concurrency", from: ["tinkerbench"], lowest: true },
  max_active_tasks: { path: "rollout.max_concurrency", from: ["OpenReward"], lowest: true },
  max_rollout_concurrency: {
    path: "rollout.max_concurrency",
    from: ["OpenReward"],
    lowest: true,
    nullIsUnset: true,
  },
  concurrency_limit: {
    path: "rollout.max_concurrency",
    from: ["tinkerbench"],
    lowest: true,
    nullIsUnset: true,
  },
  "rollout.concurrency_limit": {
    path: "rollout.max_concurrency",
    from: ["tinkerbench"],
    lowest: true,
    nullIsUnset: true,
  },
  max_total_tokens: { path: "rollout.max_total_tokens", from: ["OpenReward"] },
  max_rollout_retries: { path: "rollout.max_retries", from: ["OpenReward"] },
  system_prompt_template: { path: "rollout.system_prompt_template", from: ["OpenReward"] },
  max_tokens: { path: "rollout.max_tokens_per_turn", from: ["GEM", "tinker-cookbook"] },
  max_response_tokens: { path: "rollout.max_tokens_per_turn", from: ["OpenReward"] },
  max_tokens_per_episode: { path: "rollout.max_tokens_per_episode", from: ["tinkerbench"] },
  temperature: { path: "rollout.temperature", from: ["tinkerbench", "tinker-cookbook"] },
  rollout_timeout_s: { path: "rollout.timeout_s", from: ["tinkerbench"] },
  rollout_timeout: { path: "rollout.timeout_s", from: ["OpenReward"] },
  rollout_on_error: { path: "rollout.on_error", from: ["tinkerbench"] },
  template: { path: "rollout.template", from: ["GEM"] },
  env_wrappers: { path: "rollout.env_wrappers", from: ["GEM"] },
  // ---- advantages ----
  advantage_calculation: {
    path: "advantages.mode",
    from: ["OpenReward"],
    value: {
      rule: "direct → raw, centered → group_centered, centered_normalized → group_zscore",
      map: (v) => {
        const modes: Record<string, string> = {
          direct: "raw",
          centered: "group_centered",
          centered_normalized: "group_zscore",
        };
        const mode = modes[String(v)];
        if (!mode) {
          throw new Error(
            `advantage_calculation ${
              JSON.stringify(v)
            }: expected direct, centered or centered_normalized`,
          );
        }
        return mode;
      },
    },
  },
  gamma: { path: "advantages.gamma", from: ["GEM"] },
  use_rebn: {
    path: "advantages.mode",
    from: ["GEM"],
    value: boolTo("discounted_rebn", "discounted"),
  },
  terminate_on_parse_error: {
    path: "rollout.on_invalid_tool_call",
    from: ["tinker-cookbook"],
    value: boolTo("end", "continue"),
  },
  remove_constant_reward_groups: {
    path: "advantages.constant_groups",
    from: ["tinker-cookbook"],
    value: boolTo("drop_keep_one", "keep"),
  },
  "advantages.constantGroups": { path: "advantages.constant_groups", from: ["tinkerbench"] },
  "advantages.rewardReduction": { path: "advantages.reward_reduction", from: ["tinkerbench"] },
  "advantages.nonTerminalReward": {
    path: "advantages.non_final_turn_reward",
    from: ["tinkerbench"],
  },
  "advantages.non_terminal_reward": {
    path: "advantages.non_final_turn_reward",
    from: ["tinkerbench"],
  },
  // ---- environments (an entry's field: `<name>` stands for the entry) ----
  "environments.<name>.nonterminal_reward": {
    path: "environments.<name>.unfinished_reward",
    from: ["OpenReward"],
  },
  "advantages.clampMin": { path: "advantages.clamp_min", from: ["tinkerbench"] },
  "advantages.clampMax": { path: "advantages.clamp_max", from: ["tinkerbench"] },
  // ---- scoring ----
  method: { path: "scoring.method", from: ["OpenClaw"] },
  reward_source: { path: "scoring.rl_reward", from: ["tinkerbench"] },
  "scoring.reward_source": { path: "scoring.rl_reward", from: ["tinkerbench"] },
  hint_source: { path: "scoring.opd_hint", from: ["tinkerbench"] },
  "scoring.hint_source": { path: "scoring.opd_hint", from: ["tinkerbench"] },
  w_opd: { path: "scoring.w_opd", from: ["OpenClaw"] },
  w_rl: { path: "scoring.w_rl", from: ["OpenClaw"] },
  kl_loss_coef: { path: "scoring.kl_loss_coef", from: ["OpenClaw"] },
  eval_mode: { path: "scoring.eval_mode", from: ["OpenClaw"] },
  // ---- judge, teacher ----
  prm_m: { path: "judge.votes", from: ["OpenClaw"] },
  prm_temperature: { path: "judge.temperature", from: ["OpenClaw"] },
  prm_max_tokens: { path: "judge.max_tokens", from: ["OpenClaw"] },
  judge_base_url: { path: "judge.base_url", from: ["tinkerbench"] },
  judge_model: { path: "judge.model", from: ["tinkerbench"] },
  teacher_model_name: { path: "teacher.model", from: ["OpenClaw"] },
  // ---- logging, checkpoints ----
  log_path: { path: "logging.log_path", from: ["OpenReward", "tinker-cookbook"] },
  wandb_project_name: { path: "logging.project_name", from: ["OpenReward"] },
  wandb_run_name: { path: "logging.run_name", from: ["OpenReward"] },
  wandb_project: { path: "logging.project_name", from: ["GEM", "Hermes"] },
  wandb_name: { path: "logging.run_name", from: ["GEM", "Hermes"] },
  use_wandb: { path: "logging.use_wandb", from: ["Hermes"] },
  openreward_run_name: { path: "logging.openreward_run_name", from: ["OpenReward"] },
  log_dir: { path: "logging.log_path", from: ["GEM"] },
  save_interval: { path: "checkpoints.save_every", from: ["OpenClaw"] },
  save_every: {
    path: "checkpoints.save_every",
    from: ["GEM", "OpenReward", "tinker-cookbook"],
    value: {
      rule: "negative (GEM's −1, off) → 0",
      map: (v) => (Number(v) < 0 ? 0 : v),
    },
  },
  resume_from_ckpt: { path: "checkpoints.resume_from", from: ["OpenClaw"] },
  resume_from: { path: "checkpoints.resume_from", from: ["OpenReward"] },
  load_checkpoint_path: { path: "checkpoints.resume_from", from: ["tinker-cookbook"] },
  // ---- proxy ----
  proxy_host: { path: "proxy.host", from: ["OpenClaw"] },
  proxy_port: { path: "proxy.port", from: ["OpenClaw"] },
  served_model_name: { path: "proxy.served_model_name", from: ["OpenClaw"] },
  default_turn_type: { path: "proxy.default_turn_type", from: ["OpenClaw"] },
  session_idle_s: { path: "proxy.session_idle_s", from: ["tinkerbench"] },
  pause_during_step: { path: "proxy.pause_during_step", from: ["tinkerbench"] },
};

/**
 * OpenClaw's environment variables that are read as they are (each also works as
 * `TINKERBENCH_<ALIAS>`), by the alias they set. OpenClaw's generic ones (`MODEL_NAME`,
 * `BATCH_SIZE`, `MAX_STEPS`, `LEARNING_RATE`, ...) are read only with the `TINKERBENCH_` prefix:
 * a bare `MAX_STEPS` left in a shell for another tool must not change a run.
 */
export const CONFIG_ENV_ALIASES: Readonly<Record<string, string>> = {
  KL_LOSS_COEF: "kl_loss_coef",
  OPENCLAW_COMBINE_W_OPD: "w_opd",
  OPENCLAW_COMBINE_W_RL: "w_rl",
  PRM_M: "prm_m",
  PRM_TEMPERATURE: "prm_temperature",
  PRM_MAX_TOKENS: "prm_max_tokens",
  TEACHER_MODEL_NAME: "teacher_model_name",
  RESUME_FROM_CKPT: "resume_from_ckpt",
};

/** Settings read from `TINKERBENCH_<ALIAS>` or `TINKERBENCH_<SECTION>__<FIELD>`. */
export const ENV_PREFIX = "TINKERBENCH_";

/**
 * `TINKERBENCH_*` variables that are not training settings (backend home and sampler engine,
 * notebooks).
 */
export const NON_CONFIG_ENV_VARS: ReadonlySet<string> = new Set([
  "TINKERBENCH_HOME",
  "TINKERBENCH_SAMPLER_ENGINE",
  "TINKERBENCH_MODEL",
  "TINKERBENCH_RUN_DIR",
  "TINKERBENCH_COMPARE_RUN_DIR",
  "TINKERBENCH_HF_CACHE",
]);

/**
 * Names the seeds use for things tinkerbench does differently or not yet: an unknown-key error
 * on one of them says why instead of guessing a neighbour.
 */
export const UNSUPPORTED_SEED_NAMES: Readonly<Record<string, string>> = {
  record_dir: "OpenClaw's records are the run directory's rollouts/ store (logging.log_path)",
  api_key: "keys are read from environment variables, never from the config",
  kl_penalty_coef:
    "the cookbook's KL penalty centres the per-token KL; the closest is scoring.kl_loss_coef",
};
