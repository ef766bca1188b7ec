/**
 * The REST side of the Tinker API: training runs, checkpoints (list, delete, TTL, publish,
 * archive URL), what a checkpoint was trained from, and sessions.
 *
 * @module
 */

import { z } from "zod";
import {
  checkpointId,
  CheckpointSchema,
  CursorSchema,
  parseTinkerPath,
  type TrainingRun,
  TrainingRunSchema,
  WeightsInfoResponseSchema,
} from "../protocol/mod.ts";
import type { TinkerHttp } from "./http.ts";

/** One training run (the protocol's type, named by the client's signatures). */
export type { TrainingRun };

/** `GET training_runs`: a page of training runs and the cursor to the next. */
export const TrainingRunsPageSchema: z.ZodObject<{
  training_runs: z.ZodArray<typeof TrainingRunSchema>;
  cursor: typeof CursorSchema;
}> = z.object({
  training_runs: z.array(TrainingRunSchema),
  cursor: CursorSchema,
});
/** `GET checkpoints`: a page of checkpoints. */
export const CheckpointsPageSchema: z.ZodObject<{
  checkpoints: z.ZodArray<typeof CheckpointSchema>;
  cursor: z.ZodOptional<z.ZodNullable<typeof CursorSchema>>;
}> = z.object({
  checkpoints: z.array(CheckpointSchema),
  cursor: CursorSchema.nullish(),
});
/** `GET sessions`: session ids. */
export const SessionsPageSchema: z.ZodObject<{ sessions: z.ZodArray<z.ZodString> }> = z.object({
  sessions: z.array(z.string()),
});
/** `GET sessions/{id}`: what a session created. */
export const SessionInfoSchema: z.ZodObject<{
  training_run_ids: z.ZodArray<z.ZodString>;
  sampler_ids: z.ZodArray<z.ZodString>;
}> = z.object({
  training_run_ids: z.array(z.string()),
  sampler_ids: z.array(z.string()),
});
/** A checkpoint archive's download URL. */
export const CheckpointArchiveSchema: z.ZodObject<{
  url: z.ZodString;
  expires: z.ZodOptional<z.ZodNullable<z.ZodString>>;
}> = z.object({ url: z.string(), expires: z.string().nullish() });
const Empty = z.unknown();

/** A page of training runs and the cursor to the next. */
export type TrainingRunsPage = z.infer<typeof TrainingRunsPageSchema>;
/** A page of checkpoints. */
export type CheckpointsPage = z.infer<typeof CheckpointsPageSchema>;
/** Session ids. */
export type SessionsPage = z.infer<typeof SessionsPageSchema>;
/** What a session created. */
export type SessionInfo = z.infer<typeof SessionInfoSchema>;
/** A checkpoint archive's download URL. */
export type CheckpointArchive = z.infer<typeof CheckpointArchiveSchema>;
/** What a checkpoint was trained from. */
export type WeightsInfo = z.infer<typeof WeightsInfoResponseSchema>;

/**
 * Training runs and checkpoints of the account (or of the local backend).
 *
 * @example
 * const rest = service.restClient();
 * for (const c of (await rest.listCheckpoints(training.modelId)).checkpoints) console.log(c.tinker_path);
 */
export class RestClient {
  readonly #http: TinkerHttp;

  /** Made by `ServiceClient.restClient()`. */
  constructor(http: TinkerHttp) {
    this.#http = http;
  }

  /** Training runs, most recent first. */
  listTrainingRuns({ limit = 20, offset = 0 } = {}): Promise<TrainingRunsPage> {
    return this.#http.json(
      "GET",
      `training_runs?limit=${limit}&offset=${offset}`,
      TrainingRunsPageSchema,
    );
  }

  /** Session ids, most recent first. */
  listSessions({ limit = 20, offset = 0 } = {}): Promise<SessionsPage> {
    return this.#http.json("GET", `sessions?limit=${limit}&offset=${offset}`, SessionsPageSchema);
  }

  /** The training runs and samplers a session created. */
  getSession(sessionId: string): Promise<SessionInfo> {
    return this.#http.json("GET", `sessions/${encodeURIComponent(sessionId)}`, SessionInfoSchema);
  }

  /** One training run. */
  getTrainingRun(runId: string): Promise<TrainingRun> {
    return this.#http.json("GET", `training_runs/${encodeURIComponent(runId)}`, TrainingRunSchema);
  }

  /** Checkpoints of one run. */
  listCheckpoints(runId: string): Promise<CheckpointsPage> {
    return this.#http.json(
      "GET",
      `training_runs/${encodeURIComponent(runId)}/checkpoints`,
      CheckpointsPageSchema,
    );
  }

  /** Every checkpoint of the account. */
  listUserCheckpoints({ limit = 100, offset = 0 } = {}): Promise<CheckpointsPage> {
    return this.#http.json(
      "GET",
      `checkpoints?limit=${limit}&offset=${offset}`,
      CheckpointsPageSchema,
    );
  }

  /** Deletes a checkpoint. */
  async deleteCheckpoint(tinkerPath: string): Promise<void> {
    await this.#http.json("DELETE", this.#route(tinkerPath), Empty);
  }

  /** Sets a checkpoint's time to live in seconds; null removes it. */
  async setCheckpointTtl(tinkerPath: string, ttlSeconds: number | null): Promise<void> {
    await this.#http.json("PUT", `${this.#route(tinkerPath)}/ttl`, Empty, {
      ttl_seconds: ttlSeconds,
    });
  }

  /** Makes a checkpoint public (or private again). */
  async setCheckpointPublic(tinkerPath: string, isPublic: boolean): Promise<void> {
    await this.#http.json(
      isPublic ? "POST" : "DELETE",
      `${this.#route(tinkerPath)}/publish`,
      Empty,
      isPublic ? {} : undefined,
    );
  }

  /** A download URL of the checkpoint's files (a tar archive) and when it expires. */
  getCheckpointArchiveUrl(tinkerPath: string): Promise<CheckpointArchive> {
    return this.#http.json("GET", `${this.#route(tinkerPath)}/archive`, CheckpointArchiveSchema);
  }

  /** What a checkpoint was trained from: base model, LoRA rank and trained groups. */
  weightsInfo(tinkerPath: string): Promise<WeightsInfo> {
    return this.#http.json("POST", "weights_info", WeightsInfoResponseSchema, {
      tinker_path: tinkerPath,
    });
  }

  #route(tinkerPath: string): string {
    const p = parseTinkerPath(tinkerPath);
    return `training_runs/${encodeURIComponent(p.runId)}/checkpoints/${checkpointId(p)}`;
  }
}
