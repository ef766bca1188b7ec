/**
 * One ORS session, client side: `create_session` (SSE, the session id is the `task_id` event),
 * `create` with a split and index or a task spec, keep-alive `ping`s every 10 s, the prompt, the
 * tools (`task_tools`, falling back to `tools`), tool calls (SSE, reattaching), and `delete` +
 * `delete_session` at the end. It is a {@link TaskSession}, so a {@link ToolTaskEnv} plays it
 * exactly as it plays an environment in process.
 *
 * @module
 */

import type { ToolSpec } from "../renderers/types.ts";
import type { Block, RunToolOutput, TaskSession, TaskSpec } from "../envs/tool_env.ts";
import { OrsError, OrsSessionLostError } from "./errors.ts";
import type { OrsTransport } from "./http.ts";
import { BlockSchema, fromOrsToolSpec, RunToolOutputSchema, ToolListSchema } from "./wire.ts";
import { z } from "zod";
import { formatZodError } from "../util/zod.ts";

/** Where a session's requests go. */
export interface SessionRoute {
  transport: OrsTransport;
  /** The environment's name, for messages. */
  env: string;
  /** Path prefix of per-environment routes: `/{env}` self-hosted, `` on the hosted gateway. */
  prefix: string;
  /** Extra headers (`X-Deployment` on the hosted gateway). */
  headers: Record<string, string>;
  /** The `env_name` of `create` (null: the server's default). */
  envName: string | null;
  /** Send secrets in the body of `create` too (the reference server reads them there). */
  secretsInBody: boolean;
  /** Keep-alive interval (default 10 s). */
  pingMs: number;
}

/** What a session is opened on: a task by split and index, or a task spec. */
export type SessionTask = { split: string; index: number } | { taskSpec: TaskSpec };

/** Opens a session id (`create_session`); `{sid}` in the `end` event wins if a server sends it. */
export async function createSessionId(route: SessionRoute): Promise<string> {
  let sid: string | undefined;
  const end = await route.transport.sse(
    "/create_session",
    { env: route.env, headers: route.headers },
    {},
    (id) => (sid = id),
  );
  try {
    const parsed = end ? JSON.parse(end) : null;
    if (parsed && typeof parsed.sid === "string") sid = parsed.sid;
  } catch { /* an empty or non-JSON end event: the task_id is the id */ }
  if (!sid) throw new OrsError(`${route.env}: create_session gave no session id`);
  return sid;
}

/** An open ORS session. */
export class OrsSession implements TaskSession {
  readonly sid: string;
  readonly #route: SessionRoute;
  #ping: ReturnType<typeof setInterval> | undefined;
  #lost: OrsSessionLostError | null = null;
  #closed = false;
  #taskTools = true;

  private constructor(route: SessionRoute, sid: string) {
    this.#route = route;
    this.sid = sid;
  }

  /**
   * Opens a session on a task (create_session, then create); pings start right away.
   *
   * @example
   * const s = await OrsSession.open(route, { split: "train", index: 3 }, {});
   * const prompt = await s.prompt();
   */
  static async open(
    route: SessionRoute,
    task: SessionTask,
    secrets: Record<string, string>,
  ): Promise<OrsSession> {
    const sid = await createSessionId(route);
    const s = new OrsSession(route, sid);
    const body: Record<string, unknown> = "taskSpec" in task
      ? { task_spec: task.taskSpec, env_name: route.envName }
      : {
        split: task.split,
        index: task.index,
        ...(route.envName ? { env_name: route.envName } : {}),
      };
    const hasSecrets = Object.keys(secrets).length > 0;
    if (hasSecrets && route.secretsInBody) body.secrets = secrets;
    try {
      await route.transport.json("POST", "/create", {
        ...s.#target(),
        headers: {
          ...route.headers,
          ...(hasSecrets ? { "X-Secrets": secretsHeader(secrets) } : {}),
        },
      }, body);
    } catch (e) {
      await s.close();
      throw e;
    }
    s.#ping = setInterval(() => void s.#keepAlive(), route.pingMs);
    Deno.unrefTimer(s.#ping);
    return s;
  }

  /** The task's prompt. */
  async prompt(): Promise<Block[]> {
    const res = await this.#get(`${this.#route.prefix}/prompt`);
    return parse(z.array(BlockSchema), res, `${this.#route.env}: prompt`);
  }

  /** The task's tools: `task_tools`, or `tools` on servers without it. */
  async tools(): Promise<ToolSpec[]> {
    if (this.#taskTools) {
      try {
        const res = await this.#get(`${this.#route.prefix}/task_tools`);
        return parse(ToolListSchema, res, `${this.#route.env}: task_tools`).tools.map(
          fromOrsToolSpec,
        );
      } catch (e) {
        // Only a plain 404 (no such route) means an older server without task_tools.
        if (!(e instanceof OrsError && e.status === 404 && e.name === "OrsError")) throw e;
        this.#taskTools = false;
      }
    }
    const res = await this.#get(`${this.#route.prefix}/tools`);
    return parse(ToolListSchema, res, `${this.#route.env}: tools`).tools.map(fromOrsToolSpec);
  }

  /** Calls a tool (SSE); `{ ok: false }` is a tool-level failure the agent should see. */
  async call(name: string, input: unknown): Promise<RunToolOutput> {
    this.#check();
    const text = await this.#route.transport.sse(
      `${this.#route.prefix}/call`,
      this.#target(),
      { name, input: input ?? {} },
    );
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new OrsError(`${this.#route.env}: call ${name} returned non-JSON`);
    }
    return parse(RunToolOutputSchema, json, `${this.#route.env}: call ${name}`);
  }

  /** Ends the session: `delete` (tears the task down) and `delete_session`; errors are ignored. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#ping);
    for (const path of ["/delete", "/delete_session"]) {
      await this.#route.transport.json("POST", path, this.#target()).catch(() => {});
    }
  }

  #target() {
    return { env: this.#route.env, sid: this.sid, headers: this.#route.headers };
  }

  async #get(path: string): Promise<unknown> {
    this.#check();
    return await this.#route.transport.json("GET", path, this.#target());
  }

  #check(): void {
    if (this.#lost) throw this.#lost;
    if (this.#closed) {
      throw new OrsSessionLostError(`${this.#route.env}: session ${this.sid} is closed`);
    }
  }

  async #keepAlive(): Promise<void> {
    try {
      await this.#route.transport.json("POST", "/ping", this.#target());
    } catch (e) {
      if (this.#closed) return;
      clearInterval(this.#ping);
      this.#lost = new OrsSessionLostError(
        `${this.#route.env}: session ${this.sid} was lost (ping failed: ${(e as Error).message})`,
      );
    }
  }
}

/** `X-Secrets`: base64 of `{name: {"value": v}}`, as OpenReward's client writes it. */
export function secretsHeader(secrets: Record<string, string>): string {
  const json = JSON.stringify(
    Object.fromEntries(Object.entries(secrets).map(([k, v]) => [k, { value: v }])),
  );
  return btoa(String.fromCharCode(...new TextEncoder().encode(json)));
}

function parse<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const r = schema.safeParse(value);
  if (!r.success) {
    throw new OrsError(`${what}: unexpected response (${formatZodError(r.error)})`);
  }
  return r.data;
}
