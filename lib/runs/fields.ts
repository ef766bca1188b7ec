/**
 * The run configuration an agent reads and edits through the runs API: every field, its type,
 * default and meaning, whether it is locked, and the training-config key it becomes. The fields
 * that are training settings are read off the config schema (`lib/config/schema.ts`, the
 * settings annotated with `runApi`): their type, range, choices and description are the
 * setting's, written once there, under the API's names (the Hermes tools' `group_size`,
 * `max_token_length`, `total_steps`, ...). A run's config file is written with the trainer's
 * flat keys, which stay valid aliases however the training config is nested.
 *
 * @module
 */

import { listConfigFields } from "../config/mod.ts";
import {
  bool,
  type FieldKind,
  type FieldType,
  type FieldValue,
  runName,
  settingKind,
  trainableModel,
} from "./field_kinds.ts";

export { checkModelName, type FieldType, type FieldValue } from "./field_kinds.ts";

/** One row of the table. */
export interface FieldSpec extends FieldKind {
  /** The API name (what `POST /config` takes). */
  name: string;
  /** The training setting's dotted path, or null for the runs server's own fields. */
  setting: string | null;
  /** The training-config key it sets (an alias or path), or null when the runs server uses it. */
  trainingKey: string | null;
  default: FieldValue;
  description: string;
  /** Locked fields show their value but cannot be edited; `why` says who sets them. */
  locked?: { why: string };
}

/** The runs server's own fields, not training settings: W&B's (docs/tracking.md). */
const SERVER_FIELDS: readonly FieldSpec[] = [
  {
    name: "use_wandb",
    ...bool(),
    setting: null,
    trainingKey: null,
    default: null,
    description: "Log to Weights & Biases: null logs every run when the runs server has " +
      "WANDB_API_KEY (docs/tracking.md); the run's W&B address is its wandb_url.",
    locked: { why: "set by the runs server's environment (WANDB_API_KEY, WANDB_MODE)" },
  },
  {
    name: "wandb_name",
    ...runName,
    setting: null,
    trainingKey: null,
    default: "run",
    description: "The run's name (set to <environment>-<time> when an environment is selected).",
  },
];

/** A training setting as a field, from its schema and its `runApi` annotation. */
function settingField(path: string, f: ReturnType<typeof listConfigFields>[number]): FieldSpec {
  const meta = f.runApi!;
  const kind = settingKind(path);
  return {
    name: meta.name,
    ...(path === "policy.model" ? trainableModel(kind) : kind),
    setting: path,
    trainingKey: meta.key ?? meta.name,
    default: (meta.default ?? f.default) as FieldValue,
    description: f.description,
    ...(meta.locked ? { locked: { why: meta.locked } } : {}),
  };
}

/**
 * Every field, in the order `GET /config` lists them: the server's own, then the training
 * settings in the config schema's order. Locked: `environment` (chosen with
 * `POST /environments/{name}/select`), `env_module` (follows it), `log_path` (each run gets its
 * own directory) and `use_wandb` (this project logs to files and `report.html`, not W&B).
 */
export const FIELDS: readonly FieldSpec[] = [
  ...SERVER_FIELDS,
  ...listConfigFields().filter((f) => f.runApi).map((f) => settingField(f.path, f)),
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
