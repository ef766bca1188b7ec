/**
 * The run configuration an agent reads and edits through the runs API: every field, its type,
 * default and meaning, whether it is locked, and the training-config key it becomes. This is
 * the one table that maps the API's names (the Hermes tools' `group_size`, `max_token_length`,
 * `total_steps`, ...) onto `deno task train`'s settings; a run's config file is written from it
 * with the trainer's flat keys, which stay valid aliases however the training config is nested.
 *
 * @module
 */

import { z } from "zod";
import {
  bool,
  choice,
  type FieldType,
  type FieldValue,
  int,
  modelName,
  num,
  runName,
} from "./field_kinds.ts";

export { checkModelName, type FieldType, type FieldValue } from "./field_kinds.ts";

/** One row of the table. */
export interface FieldSpec {
  /** The API name (what `POST /config` takes). */
  name: string;
  type: FieldType;
  /** The flat training-config key it sets, or null when the runs server itself uses it. */
  trainingKey: string | null;
  default: FieldValue;
  description: string;
  /** What values are allowed, in words (shown in errors and in `GET /config`). */
  allowed: string;
  /** Validates (and, for numbers given as strings, converts) a new value. */
  schema: z.ZodType<FieldValue>;
  /** Locked fields show their value but cannot be edited; `why` says who sets them. */
  locked?: { why: string };
}

/**
 * Every field, in the order `GET /config` lists them. The seed's names come first. Locked:
 * `environment` (chosen with `POST /environments/{name}/select`), `log_path` (each run gets its
 * own directory) and `use_wandb` (W&B follows the runs server's `WANDB_API_KEY`).
 */
export const FIELDS: readonly FieldSpec[] = [
  {
    name: "group_size",
    ...int(1, 256),
    trainingKey: "group_size",
    default: 4,
    description: "Episodes per group, all from one start state (GRPO's group).",
  },
  {
    name: "max_token_length",
    ...int(1, 8192),
    trainingKey: "max_tokens",
    default: 256,
    description: "Most tokens the policy samples per turn.",
  },
  {
    name: "total_steps",
    ...int(1, 100_000),
    trainingKey: "max_steps",
    default: 50,
    description: "Training steps of the run (each: collect, score, one optimizer step).",
  },
  {
    name: "steps_per_eval",
    ...int(0, 100_000),
    trainingKey: "save_interval",
    default: 25,
    description: "Save a checkpoint every N steps and evaluate it on held-out episodes " +
      "(0: only the final checkpoint). The final and interrupted checkpoints are always saved.",
  },
  {
    name: "use_wandb",
    ...bool(),
    trainingKey: null,
    default: null,
    description: "Log to Weights & Biases: null logs every run when the runs server has " +
      "WANDB_API_KEY (docs/tracking.md); the run's W&B address is its wandb_url.",
    locked: { why: "set by the runs server's environment (WANDB_API_KEY, WANDB_MODE)" },
  },
  {
    name: "wandb_name",
    ...runName,
    trainingKey: null,
    default: "run",
    description: "The run's name (set to <environment>-<time> when an environment is selected).",
  },
  {
    name: "max_num_workers",
    ...int(1, 1024),
    trainingKey: "num_env",
    default: 32,
    description: "Episodes played at once (the backend batches concurrent sampling).",
  },
  {
    name: "environment",
    type: "string",
    allowed: "a registered environment id",
    schema: z.string() as z.ZodType<FieldValue>,
    trainingKey: "env_id",
    default: null,
    description: "The environment trained on.",
    locked: { why: "set by POST /environments/{name}/select (rl_select_environment)" },
  },
  {
    name: "method",
    ...choice(["rl", "opd", "combine"]),
    trainingKey: "method",
    default: "rl",
    description: "rl: env rewards; opd: on-policy distillation from hindsight hints; " +
      "combine: both.",
  },
  {
    name: "model_name",
    ...modelName,
    trainingKey: "model_name",
    default: "local/games2",
    description: "The base model of the policy.",
  },
  {
    name: "batch_size",
    ...int(1, 4096),
    trainingKey: "batch_size",
    default: 4,
    description: "Groups per training step.",
  },
  {
    name: "learning_rate",
    ...num(0, 1, { nullable: true, exclusiveMin: true }),
    trainingKey: "learning_rate",
    default: null,
    description: "Adam's learning rate; null picks 3e-3 on local models, 1e-4 on cloud ones.",
  },
  {
    name: "lora_rank",
    ...int(1, 1024),
    trainingKey: "lora_rank",
    default: 32,
    description: "Rank of the LoRA adapter trained.",
  },
  {
    name: "temperature",
    ...num(0, 2),
    trainingKey: "temperature",
    default: 1,
    description: "Sampling temperature of rollouts and of the held-out evaluation.",
  },
  {
    name: "seed",
    ...int(0, 2 ** 31 - 1),
    trainingKey: "seed",
    default: 0,
    description: "Seeds environments and sampling; the same seed replays the same run.",
  },
  {
    name: "loss_fn",
    ...choice(["importance_sampling", "ppo", "cispo"]),
    trainingKey: "loss_fn",
    default: "importance_sampling",
    description: "The policy-gradient loss.",
  },
  {
    name: "kl_loss_coef",
    ...num(0, 10),
    trainingKey: "kl_loss_coef",
    default: 0,
    description: "Weight of the per-token KL penalty towards the base model.",
  },
  {
    name: "w_opd",
    ...num(0, 10),
    trainingKey: "w_opd",
    default: 1,
    description: "Weight of the distillation term (method combine).",
  },
  {
    name: "w_rl",
    ...num(0, 10),
    trainingKey: "w_rl",
    default: 1,
    description: "Weight of the RL term (method combine).",
  },
  {
    name: "train_epochs",
    ...int(1, 16),
    trainingKey: "train_epochs",
    default: 1,
    description: "Optimizer passes over each step's batch.",
  },
  {
    name: "eval_episodes",
    ...int(0, 4096),
    trainingKey: null,
    default: 32,
    description: "Held-out episodes per evaluated checkpoint (0: no evaluation).",
  },
  {
    name: "env_module",
    type: "string",
    allowed: "set by the server",
    schema: z.string() as z.ZodType<FieldValue>,
    trainingKey: "env_module",
    default: null,
    description: "The module that registers the environment (environments loaded with " +
      "`deno task runs --env-module`); null for built-in ones.",
    locked: { why: "follows the selected environment" },
  },
  {
    name: "log_path",
    type: "string",
    allowed: "set by the server",
    schema: z.string() as z.ZodType<FieldValue>,
    trainingKey: "log_path",
    default: null,
    description: "The run directory (metrics, checkpoints, rollouts, report).",
    locked: { why: "each run gets its own directory under the data dir" },
  },
];

const BY_NAME = new Map(FIELDS.map((f) => [f.name, f]));

/** A run configuration: a value for every field, by API name. */
export type RunConfig = Record<string, FieldValue>;

/** A bad field name or value; `status` is the HTTP status it answers with. */
export class FieldError extends Error {
  override name = "FieldError";
  constructor(
    message: string,
    readonly status: 400 | 403,
    readonly extra: { field?: string } & Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/**
 * The default configuration of an environment, with a fresh run name. `envModule` is the module
 * that registers it, for environments that are not built in.
 */
export function defaultConfig(
  environment: string,
  { now = new Date(), envModule = null }: { now?: Date; envModule?: string | null } = {},
): RunConfig {
  const config: RunConfig = Object.fromEntries(FIELDS.map((f) => [f.name, f.default]));
  config.environment = environment;
  config.env_module = envModule;
  config.wandb_name = runNameFor(environment, now);
  return config;
}

/** `<environment>-<YYYYmmdd-HHMMSS>`, the successor tools' run name, as a valid name. */
export function runNameFor(environment: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `${environment.replace(/^[a-z]+:/, "").replace(/[^A-Za-z0-9._-]/g, "_")}-${stamp}`;
}

/**
 * Checks a new value of an editable field and returns it as stored (numbers given as text
 * become numbers). Unknown and locked fields and bad values throw {@link FieldError}.
 */
export function validateField(name: string, value: unknown): FieldValue {
  const spec = BY_NAME.get(name);
  if (!spec) {
    throw new FieldError(`unknown field ${JSON.stringify(name)}`, 400, {
      available_fields: FIELDS.filter((f) => !f.locked).map((f) => f.name),
    });
  }
  if (spec.locked) {
    throw new FieldError(`field ${name} is locked: ${spec.locked.why}`, 403, { field: name });
  }
  const parsed = spec.schema.safeParse(value);
  if (!parsed.success) {
    const detail = parsed.error.issues.find((i) => i.code === "custom")?.message;
    throw new FieldError(
      `${name} must be ${spec.allowed} (got ${JSON.stringify(value) ?? "nothing"})` +
        (detail && detail !== "not a number" ? `: ${detail}` : ""),
      400,
      { field: name, allowed: spec.allowed },
    );
  }
  return parsed.data;
}

/** A field's description for `GET /config`. */
export interface FieldView {
  name: string;
  type: FieldType;
  default: FieldValue;
  description: string;
  allowed: string;
  current_value: FieldValue;
  /** The `deno task train` setting it becomes (null: used by the runs server). */
  training_key: string | null;
  locked_value?: FieldValue;
  locked_because?: string;
}

/** The fields split into editable and locked, with their current values. */
export function describeFields(
  config: RunConfig,
): { configurable: FieldView[]; locked: FieldView[] } {
  const view = (f: FieldSpec): FieldView => ({
    name: f.name,
    type: f.type,
    default: f.default,
    description: f.description,
    allowed: f.allowed,
    current_value: config[f.name] ?? null,
    training_key: f.trainingKey,
    ...(f.locked ? { locked_value: config[f.name] ?? null, locked_because: f.locked.why } : {}),
  });
  return {
    configurable: FIELDS.filter((f) => !f.locked).map(view),
    locked: FIELDS.filter((f) => f.locked).map(view),
  };
}

/**
 * The training settings of a run, by flat training-config key, ready for its config file.
 * A null value means "the trainer's own default" and is left out.
 */
export function trainingSettings(config: RunConfig, logPath: string): Record<string, FieldValue> {
  const out: Record<string, FieldValue> = {};
  for (const f of FIELDS) {
    if (f.trainingKey === null) continue;
    const value = f.name === "log_path" ? logPath : config[f.name];
    if (value !== null && value !== undefined) out[f.trainingKey] = value;
  }
  return out;
}

/** A stored configuration brought up to the current table (fields added later get defaults). */
export function completeConfig(
  stored: Record<string, unknown>,
  environment: string,
  envModule: string | null,
): RunConfig {
  const config = defaultConfig(environment, { envModule });
  for (const f of FIELDS) {
    if (f.name in stored) config[f.name] = stored[f.name] as FieldValue;
  }
  config.environment = environment;
  config.env_module = envModule;
  return config;
}
