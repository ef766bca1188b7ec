/**
 * The runs API's wire format: request bodies (validated by the server) and responses (parsed by
 * {@link RunsClient}), as zod schemas. Response shapes follow the Hermes RL tools' successor
 * where it defined one; `state` is also sent as `status`, the name those tools read.
 *
 * @module
 */

import { z } from "zod";
import { CheckpointRecordSchema } from "../rundir/mod.ts";
import { formatZodError } from "../util/zod.ts";
import { HttpError } from "../http/errors.ts";
import { RunStateSchema } from "./store.ts";

const fieldValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);

// ---- requests ----

/** `POST /config`. */
export const EditConfigBodySchema = z.object({
  field: z.string().min(1),
  value: z.unknown(),
}).strict();

/**
 * `POST /runs`: `{}` (the first tools) or `{wandb_project, lora_rank, learning_rate}` (later
 * ones); any editable field may be given and applies to this run only.
 */
export const StartRunBodySchema = z.object({
  wandb_project: z.string().min(1).max(100).optional(),
}).catchall(z.unknown());

/** `POST /test/inference`. */
export const InferenceBodySchema = z.object({
  /** User messages; leave out to use the environment's own first observations. */
  prompts: z.array(z.string().min(1).max(20_000)).max(32).optional(),
  max_tokens: z.number().int().min(1).max(4096).default(256),
  temperature: z.number().min(0).max(2).default(1),
  /** Sample from this run's newest checkpoint instead of the base model. */
  run_id: z.string().min(1).optional(),
  /** Prompt i is scored on an environment episode reset with seed + i. */
  seed: z.number().int().min(0).max(2 ** 31 - 64).default(0),
  /** Observations to use when no prompts are given. */
  count: z.number().int().min(1).max(32).default(4),
}).strict();

/** Body of `POST /test/inference`, as sent. */
export type InferenceBody = z.input<typeof InferenceBodySchema>;

// ---- responses ----

/** The body of every error answer. */
export const ErrorBodySchema = z.object({ error: z.string() }).loose();

/** `GET /health`. */
export const HealthSchema = z.object({
  status: z.literal("ok"),
  environment: z.string().nullable(),
  runs: z.object({ queued: z.number(), running: z.number(), total: z.number() }),
  max_concurrent: z.number(),
});

/** One environment of `GET /environments`. */
export const EnvironmentSchema = z.object({
  /** The registry id, e.g. `game:GuessTheNumber-v0-easy`; what `select` takes. */
  name: z.string(),
  class_name: z.string(),
  /** The module that defines it, relative to the repository when inside it (null: unknown). */
  file_path: z.string().nullable(),
  description: z.string(),
});

/** `POST /environments/{name}/select`. */
export const SelectResultSchema = z.object({
  message: z.string(),
  environment: z.string(),
  file_path: z.string().nullable(),
  config: z.record(z.string(), fieldValue),
});

/** A field of `GET /config`. */
export const FieldViewSchema = z.object({
  name: z.string(),
  type: z.enum(["integer", "number", "boolean", "string", "enum"]),
  default: fieldValue,
  description: z.string(),
  allowed: z.string(),
  current_value: fieldValue,
  training_key: z.string().nullable(),
  locked_value: fieldValue.optional(),
  locked_because: z.string().optional(),
});

/** `GET /config`. */
export const ConfigViewSchema = z.object({
  environment: z.string(),
  configurable_fields: z.array(FieldViewSchema),
  locked_fields: z.array(FieldViewSchema),
  tip: z.string(),
});

/** `POST /config`. */
export const EditResultSchema = z.object({
  message: z.string(),
  field: z.string(),
  value: fieldValue,
  config: z.record(z.string(), fieldValue),
});

const stepSummary = z.object({
  step: z.number(),
  reward_mean: z.number().nullable(),
  percent_correct: z.number().nullable(),
  loss: z.number().nullable(),
});

/** The files of a run. */
export const RunPathsSchema = z.object({
  dir: z.string(),
  config: z.string(),
  log: z.string(),
  metrics: z.string(),
  checkpoints: z.string(),
  report: z.string(),
});

/** `GET /runs/{id}` (and the run part of `POST /runs`). */
export const RunStatusSchema = z.object({
  run_id: z.string(),
  name: z.string(),
  wandb_run_name: z.string(),
  wandb_project: z.string().nullable(),
  /** The run on W&B (when the runs server has WANDB_API_KEY), else null. */
  wandb_url: z.string().nullable(),
  environment: z.string(),
  state: RunStateSchema,
  status: RunStateSchema,
  /** A stop was asked for and the process has not exited yet. */
  stopping: z.boolean(),
  step: z.number(),
  total_steps: z.number(),
  reward_mean: z.number().nullable(),
  loss: z.number().nullable(),
  percent_correct: z.number().nullable(),
  eval_percent_correct: z.number().nullable(),
  evaluated_step: z.number().nullable(),
  evaluating: z.boolean(),
  elapsed_s: z.number(),
  eta_s: z.number().nullable(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  attempts: z.number(),
  /** The training process while running (null otherwise). */
  pid: z.number().nullable(),
  /**
   * Why the run failed or stopped short (null otherwise). Not `error`: clients (the Hermes
   * tools) read an `error` key as the call's failure.
   */
  failure: z.string().nullable(),
  last_checkpoint: CheckpointRecordSchema.nullable(),
  /** Lines of the run's files left out as unreadable (`metrics.jsonl line 4: …`); [] when none. */
  file_problems: z.array(z.string()),
  config: z.record(z.string(), fieldValue),
  paths: RunPathsSchema,
  /** Rerunning this resumes the run by hand, as `deno task train` does. */
  command: z.array(z.string()),
});

/** `POST /runs`. */
export const StartResultSchema = RunStatusSchema.extend({ message: z.string() });

/** A run in `GET /runs`. */
export const RunSummarySchema = z.object({
  run_id: z.string(),
  name: z.string(),
  wandb_run_name: z.string(),
  environment: z.string(),
  state: RunStateSchema,
  status: RunStateSchema,
  step: z.number(),
  total_steps: z.number(),
  created_at: z.string(),
});

/** `GET /runs`. */
export const RunListSchema = z.object({
  runs: z.array(RunSummarySchema),
  count: z.number(),
});

/** `POST /runs/{id}/stop` and `/resume`. */
export const RunActionSchema = z.object({
  message: z.string(),
  run_id: z.string(),
  state: RunStateSchema,
  status: RunStateSchema,
  stopping: z.boolean(),
  resume_from: CheckpointRecordSchema.nullable().optional(),
});

/** A checkpoint's held-out evaluation. */
export const EvalViewSchema = z.object({
  step: z.number(),
  kind: z.string(),
  checkpoint: z.string(),
  episodes: z.number(),
  percent_correct: z.number().nullable(),
  reward_mean: z.number().nullable(),
  /** Why the evaluation failed (null when it ran). */
  failure: z.string().nullable(),
});

/** `GET /runs/{id}/metrics`. */
export const RunResultsSchema = z.object({
  run_id: z.string(),
  state: RunStateSchema,
  status: RunStateSchema,
  environment: z.string(),
  wandb_project: z.string().nullable(),
  wandb_run_name: z.string(),
  /** The run on W&B (when the runs server has WANDB_API_KEY), else null. */
  wandb_url: z.string().nullable(),
  final_metrics: z.record(z.string(), z.number()),
  summary: stepSummary,
  history: z.array(stepSummary),
  /** The trained weights: `sampler_path` samples, `state_path` resumes. */
  weights: z.object({
    step: z.number(),
    kind: z.string(),
    sampler_path: z.string().nullable(),
    state_path: z.string(),
  }).nullable(),
  /** The weights to use: the sampler path when there is one, else the state path. */
  tinker_path: z.string().nullable(),
  checkpoints: z.array(CheckpointRecordSchema),
  evals: z.array(EvalViewSchema),
  eval_percent_correct: z.number().nullable(),
  report_path: z.string().nullable(),
  metrics_path: z.string(),
});

/** `POST /test/inference`. */
export const InferenceResultSchema = z.object({
  environment: z.string(),
  model: z.string(),
  /** `base model <name>` or the checkpoint path sampled from. */
  policy: z.string(),
  results: z.array(z.object({
    prompt: z.string(),
    response: z.string(),
    env_seed: z.number(),
    format_ok: z.boolean(),
    reward: z.number(),
    verifier: z.object({
      reason: z.string().nullable(),
      feedback: z.string(),
      episode_over: z.boolean(),
    }),
    truncated: z.boolean(),
  })),
  summary: z.object({
    count: z.number(),
    mean_reward: z.number(),
    format_ok_frac: z.number(),
  }),
});

/** Response types. */
export type Health = z.infer<typeof HealthSchema>;
/** An environment listed by `GET /environments`. */
export type Environment = z.infer<typeof EnvironmentSchema>;
/** `POST /environments/{name}/select`. */
export type SelectResult = z.infer<typeof SelectResultSchema>;
/** `GET /config`. */
export type ConfigView = z.infer<typeof ConfigViewSchema>;
/** `POST /config`. */
export type EditResult = z.infer<typeof EditResultSchema>;
/** `GET /runs/{id}`. */
export type RunStatus = z.infer<typeof RunStatusSchema>;
/** `POST /runs`. */
export type StartResult = z.infer<typeof StartResultSchema>;
/** `GET /runs`. */
export type RunList = z.infer<typeof RunListSchema>;
/** `POST /runs/{id}/stop` and `/resume`. */
export type RunAction = z.infer<typeof RunActionSchema>;
/** `GET /runs/{id}/metrics`. */
export type RunResults = z.infer<typeof RunResultsSchema>;
/** `POST /test/inference`. */
export type InferenceResponse = z.infer<typeof InferenceResultSchema>;

/** A failed call: the HTTP status and the JSON body (`error` says what is wrong). */
export class RunsError extends HttpError {
  override name = "RunsError";
  constructor(status: number, readonly body: { error: string } & Record<string, unknown>) {
    super(status, body.error);
  }
}

/** Validates a request body; a mistake is a 400 naming the field and what is wrong. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  throw new RunsError(400, { error: formatZodError(parsed.error) });
}

/**
 * The runs API's operations. The HTTP server, {@link RunsClient} and the MCP tools all speak
 * it: in-process it is the service itself, remotely the client.
 */
export interface RunsApi {
  health(): Promise<Health>;
  listEnvironments(): Promise<Environment[]>;
  selectEnvironment(name: string): Promise<SelectResult>;
  getConfig(): Promise<ConfigView>;
  editConfig(field: string, value: unknown): Promise<EditResult>;
  startRun(body?: Record<string, unknown>): Promise<StartResult>;
  listRuns(): Promise<RunList>;
  getRun(id: string): Promise<RunStatus>;
  stopRun(id: string): Promise<RunAction>;
  resumeRun(id: string): Promise<RunAction>;
  getResults(id: string): Promise<RunResults>;
  testInference(body: InferenceBody): Promise<InferenceResponse>;
}
