/**
 * The Open Reward Standard client: environments on a self-hosted ORS server (routes
 * `/{env}/...`, e.g. `deno task envs serve` or the reference Python server) or on the hosted
 * OpenReward gateway (bare routes with `X-Deployment: Org/Env`, key in `OPENREWARD_API_KEY`),
 * their splits and tasks, and sessions. An {@link OrsEnvironment} is a {@link TaskProvider}:
 * `new ToolTaskEnv(client.environment("whodunit-v0-easy"))` is an environment of this project,
 * played, scored and trained like any other.
 *
 * @module
 */

import { z } from "zod";
import type { TaskSpec, TaskSplit } from "../envs/tool_env.ts";
import type { TaskProvider, TaskRef } from "../envs/tool_task_env.ts";
import type { ToolSpec } from "../renderers/types.ts";
import { OrsError } from "./errors.ts";
import { DEFAULT_RETRY, OrsTransport, type RetryPolicy } from "./http.ts";
import { createSessionId, OrsSession, type SessionRoute, type SessionTask } from "./session.ts";
import {
  type EnvironmentInfo,
  EnvironmentInfoSchema,
  fromOrsToolSpec,
  SplitSchema,
  ToolListSchema,
} from "./wire.ts";

/** The hosted gateway, unless `OPENREWARD_SESSION_URL` or `OPENREWARD_URL` says otherwise. */
export const HOSTED_SESSIONS_URL = "https://sessions.openreward.ai";

/** Options of {@link OrsClient}. */
export interface OrsClientOptions {
  /**
   * A self-hosted ORS server, e.g. `http://127.0.0.1:8080`. Absent: the hosted OpenReward
   * gateway (`OPENREWARD_SESSION_URL`, else `sessions.` + `OPENREWARD_URL`, else
   * https://sessions.openreward.ai), which needs a key.
   */
  baseUrl?: string;
  /**
   * Route as the hosted gateway does (bare paths, `X-Deployment: Org/Env`, stateless queries in
   * throwaway sessions); default: when no `baseUrl` is given. This project's server routes both.
   */
  hosted?: boolean;
  /** Sent as `X-API-Key` (default: `OPENREWARD_API_KEY`). */
  apiKey?: string;
  /** Keep-alive interval of sessions (default 10 s). */
  pingMs?: number;
  retry?: Partial<RetryPolicy>;
}

/** A client of one ORS server (or of the hosted gateway). */
export class OrsClient {
  readonly baseUrl: string;
  readonly hosted: boolean;
  readonly transport: OrsTransport;
  readonly #pingMs: number;

  constructor(opts: OrsClientOptions = {}) {
    this.hosted = opts.hosted ?? opts.baseUrl === undefined;
    const apiKey = opts.apiKey ?? env("OPENREWARD_API_KEY");
    if (this.hosted && !apiKey) {
      throw new OrsError(
        "the hosted OpenReward gateway needs a key: set OPENREWARD_API_KEY (or give base_url " +
          "for a self-hosted ORS server)",
      );
    }
    this.baseUrl = (opts.baseUrl ?? hostedUrl()).replace(/\/+$/, "");
    this.transport = new OrsTransport(
      this.baseUrl,
      {
        "User-Agent": "tinkerbench-ors/1",
        ...(apiKey ? { "X-API-Key": apiKey } : {}),
      },
      { ...DEFAULT_RETRY, ...opts.retry },
    );
    this.#pingMs = opts.pingMs ?? 10_000;
  }

  /** `GET /health`. */
  async health(): Promise<boolean> {
    const r = await this.transport.json<{ status?: string }>("GET", "/health", { env: "server" });
    return r.status === "ok";
  }

  /** The environment names the server serves (`GET /list_environments`). */
  async listEnvironments(): Promise<string[]> {
    return z.array(z.string()).parse(
      await this.transport.json("GET", "/list_environments", { env: "server" }),
    );
  }

  /** This project's listing with descriptions, splits and tools (`GET /environments`). */
  async environments(): Promise<EnvironmentInfo[]> {
    return z.array(EnvironmentInfoSchema).parse(
      await this.transport.json("GET", "/environments", { env: "server" }),
    );
  }

  /**
   * An environment: its ORS name on a self-hosted server, `Org/Env` on the hosted gateway.
   *
   * @example
   * const env = client.environment("wordproblems-v0", { secrets: { openai_api_key: "…" } });
   * await env.numTasks("test");
   */
  environment(
    name: string,
    opts: { secrets?: Record<string, string>; variant?: string } = {},
  ): OrsEnvironment {
    const route: SessionRoute = this.hosted
      ? {
        transport: this.transport,
        env: name,
        prefix: opts.variant ? `/${opts.variant}` : "",
        headers: { "X-Deployment": name },
        envName: opts.variant ?? null,
        secretsInBody: false,
        pingMs: this.#pingMs,
      }
      : {
        transport: this.transport,
        env: name,
        prefix: `/${encodeURIComponent(name)}`,
        headers: {},
        envName: name,
        secretsInBody: true,
        pingMs: this.#pingMs,
      };
    return new OrsEnvironment(route, this.hosted, opts.secrets ?? {});
  }
}

/** An environment of an ORS server: its tasks, tools and sessions. */
export class OrsEnvironment implements TaskProvider {
  readonly name: string;
  readonly #route: SessionRoute;
  readonly #hosted: boolean;
  readonly #secrets: Record<string, string>;

  constructor(route: SessionRoute, hosted: boolean, secrets: Record<string, string>) {
    this.#route = route;
    this.name = route.env;
    this.#hosted = hosted;
    this.#secrets = secrets;
  }

  /** The splits. */
  async splits(): Promise<TaskSplit[]> {
    return z.array(SplitSchema).parse(await this.#query("GET", "/splits"));
  }

  /** Tasks in a split. */
  async numTasks(split: string): Promise<number> {
    const r = await this.#query("POST", "/num_tasks", { split });
    return z.object({ num_tasks: z.number().int() }).parse(r).num_tasks;
  }

  /** Every task of a split (environments with index-based datasets refuse with a 400). */
  async tasks(split: string): Promise<TaskSpec[]> {
    return TaskListSchema.parse(await this.#query("POST", "/tasks", { split })).tasks;
  }

  /** One task. */
  async task(split: string, index: number): Promise<TaskSpec> {
    const r = await this.#query("POST", "/task", { split, index });
    return z.object({ task: z.record(z.string(), z.unknown()) }).parse(r).task;
  }

  /** Tasks `start` to `stop` (Python slice bounds: negatives count from the end). */
  async taskRange(split: string, start?: number, stop?: number): Promise<TaskSpec[]> {
    const r = await this.#query("POST", "/task_range", { split, start, stop });
    return TaskListSchema.parse(r).tasks;
  }

  /** The tools every task has. */
  async tools(): Promise<ToolSpec[]> {
    return ToolListSchema.parse(await this.#query("GET", "/tools")).tools.map(fromOrsToolSpec);
  }

  /** A session on a task by split and index (the {@link TaskProvider} method). */
  open(task: TaskRef): Promise<OrsSession> {
    return this.session(task);
  }

  /** A session on a task by split and index, or on a task spec. */
  session(task: SessionTask): Promise<OrsSession> {
    return OrsSession.open(this.#route, task, this.#secrets);
  }

  /**
   * A stateless query. The hosted gateway routes only requests that carry a session, so there a
   * throwaway session wraps it (as OpenReward's client does).
   */
  async #query(method: "GET" | "POST", path: string, body?: unknown): Promise<unknown> {
    const t = this.#route.transport;
    const target = { env: this.name, headers: this.#route.headers };
    if (!this.#hosted) return await t.json(method, this.#route.prefix + path, target, body);
    const sid = await createSessionId(this.#route);
    try {
      return await t.json(method, this.#route.prefix + path, { ...target, sid }, body);
    } finally {
      await t.json("POST", "/delete_session", { ...target, sid }).catch(() => {});
    }
  }
}

const TaskListSchema = z.object({ tasks: z.array(z.record(z.string(), z.unknown())) });

function env(name: string): string | undefined {
  try {
    return Deno.env.get(name) || undefined;
  } catch {
    return undefined; // no --allow-env
  }
}

function hostedUrl(): string {
  const sessions = env("OPENREWARD_SESSION_URL");
  if (sessions) return sessions;
  const root = env("OPENREWARD_URL");
  if (!root) return HOSTED_SESSIONS_URL;
  const u = new URL(root);
  u.hostname = `sessions.${u.hostname}`;
  return u.toString();
}
