/**
 * A typed client of the runs API: every response is checked against its schema, and every
 * failure is a {@link RunsError} with the server's status and message.
 *
 * @example
 * const runs = new RunsClient(); // RL_API_URL or http://localhost:8080
 * await runs.selectEnvironment("game:GuessTheNumber-v0-easy");
 * await runs.editConfig("total_steps", 10);
 * const { run_id } = await runs.startRun();
 * const status = await runs.getRun(run_id); // state, step, reward_mean, eta_s, ...
 *
 * @module
 */

import type { z } from "zod";
import {
  ConfigViewSchema,
  EditResultSchema,
  EnvironmentSchema,
  ErrorBodySchema,
  HealthSchema,
  type InferenceBody,
  InferenceResultSchema,
  RunActionSchema,
  RunListSchema,
  RunResultsSchema,
  type RunsApi,
  RunsError,
  RunStatusSchema,
  SelectResultSchema,
  StartResultSchema,
} from "./schemas.ts";
import { formatZodError } from "../util/zod.ts";
import { readRunsKey } from "./api_key.ts";

/** Options of {@link RunsClient}. */
export interface RunsClientOptions {
  /** The server; default `$RL_API_URL` or `http://localhost:8080` (what the Hermes tools use). */
  baseUrl?: string;
  /**
   * Bearer key; default `$TINKERBENCH_RUNS_API_KEY`, else the key `deno task runs` keeps in
   * its data dir (`<dataDir>/runs-api/api-key`, readable by its owner only).
   */
  apiKey?: string;
  /** The runs server's data dir, where its key is read (default `$TINKERBENCH_HOME`'s). */
  dataDir?: string;
  /** Per-request timeout in ms (default 120 000: test inference samples before answering). */
  timeoutMs?: number;
}

/** The runs API over HTTP. */
export class RunsClient implements RunsApi {
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #timeoutMs: number;

  constructor(o: RunsClientOptions = {}) {
    this.baseUrl = (o.baseUrl ?? Deno.env.get("RL_API_URL") ?? "http://localhost:8080")
      .replace(/\/+$/, "");
    this.#apiKey = o.apiKey ?? (Deno.env.get("TINKERBENCH_RUNS_API_KEY") || undefined) ??
      readRunsKey(o.dataDir);
    this.#timeoutMs = o.timeoutMs ?? 120_000;
  }

  /** `GET /health`. */
  health() {
    return this.#call("GET", "/health", HealthSchema);
  }

  /** `GET /environments`. */
  listEnvironments() {
    return this.#call("GET", "/environments", EnvironmentSchema.array());
  }

  /** `POST /environments/{name}/select`: loads its default config. */
  selectEnvironment(name: string) {
    return this.#call(
      "POST",
      `/environments/${encodeURIComponent(name)}/select`,
      SelectResultSchema,
    );
  }

  /** `GET /config`. */
  getConfig() {
    return this.#call("GET", "/config", ConfigViewSchema);
  }

  /** `POST /config` with `{field, value}`. */
  editConfig(field: string, value: unknown) {
    return this.#call("POST", "/config", EditResultSchema, { field, value });
  }

  /** `POST /runs`; the body may set `wandb_project` and any editable field for this run. */
  startRun(body: Record<string, unknown> = {}) {
    return this.#call("POST", "/runs", StartResultSchema, body);
  }

  /** `GET /runs`. */
  listRuns() {
    return this.#call("GET", "/runs", RunListSchema);
  }

  /** `GET /runs/{id}`. */
  getRun(id: string) {
    return this.#call("GET", `/runs/${encodeURIComponent(id)}`, RunStatusSchema);
  }

  /** `POST /runs/{id}/stop`. */
  stopRun(id: string) {
    return this.#call("POST", `/runs/${encodeURIComponent(id)}/stop`, RunActionSchema);
  }

  /** `POST /runs/{id}/resume`. */
  resumeRun(id: string) {
    return this.#call("POST", `/runs/${encodeURIComponent(id)}/resume`, RunActionSchema);
  }

  /** `GET /runs/{id}/metrics`. */
  getResults(id: string) {
    return this.#call("GET", `/runs/${encodeURIComponent(id)}/metrics`, RunResultsSchema);
  }

  /** `POST /test/inference`. */
  testInference(body: InferenceBody) {
    return this.#call("POST", "/test/inference", InferenceResultSchema, body);
  }

  async #call<S extends z.ZodType>(
    method: "GET" | "POST",
    path: string,
    schema: S,
    body?: unknown,
  ): Promise<z.infer<S>> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
    let res: Response;
    try {
      res = await fetch(this.baseUrl + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (e) {
      throw new Error(
        `cannot reach the runs server at ${this.baseUrl} (${(e as Error).message}); ` +
          "start it with `deno task runs`",
      );
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new RunsError(res.status, { error: `HTTP ${res.status}: ${text.slice(0, 200)}` });
    }
    if (!res.ok) {
      const err = ErrorBodySchema.safeParse(json);
      throw new RunsError(
        res.status,
        err.success ? err.data : { error: `HTTP ${res.status}: ${text.slice(0, 200)}` },
      );
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      throw new Error(`${method} ${path}: unexpected response (${formatZodError(parsed.error)})`);
    }
    return parsed.data;
  }
}
