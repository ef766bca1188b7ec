/**
 * An Open Reward Standard server for this project's tool environments, compatible with the
 * reference Python client (`openrewardstandard/python-sdk`) and OpenReward's: the same routes
 * (`/{env}/...` per environment, bare paths routed by `X-Deployment` or redirected to the first
 * environment), `create_session` and `call` as server-sent events, results cut into 4096-character
 * chunks, `: ping` comments every 10 s while a tool runs, reattaching with `task_id`, errors as
 * `{"detail": …}`. Every block carries `detail` and every tool output all four keys; task
 * responses carry `env_name` (the traps of wave2-protocols.md §1.6). `GET /environments` lists
 * each environment's ORS name, description, splits and tools. {@link startOrsServer} serves it.
 *
 * @module
 */

import { type Context, Hono } from "hono";
import type { ToolEnvironment } from "../envs/tool_env.ts";
import { HttpError, jsonErrors, keyAuth } from "../http/mod.ts";
import { readOrsBody, secretsHeader, sidOf } from "./request.ts";
import { type CallTask, TaskSessions, type TaskSessionsOptions } from "./sessions.ts";
import { sseEvent } from "./sse.ts";
import { callResponse, sseEventsResponse } from "./streams.ts";
import {
  CallBodySchema,
  CreateBodySchema,
  type EnvironmentInfo,
  pySlice,
  SplitBodySchema,
  TaskBodySchema,
  TaskRangeBodySchema,
  toOrsToolSpec,
} from "./wire.ts";

/** Options of {@link createOrsApp}. */
export interface OrsAppOptions extends Partial<TaskSessionsOptions> {
  /** The environments served; the first is the default of bare paths and of `create`. */
  environments: readonly ToolEnvironment[];
  /** Registry ids by ORS name, for `GET /environments`. */
  registryIds?: Readonly<Record<string, string>>;
  /** Keep-alive comment interval while a tool runs (default 10 s, the reference's). */
  pingMs?: number;
  /** `/tasks` lists at most this many tasks; bigger splits are index-based (default 10,000). */
  listLimit?: number;
  /** Require this key as `X-API-Key` (what ORS clients send) on every route but `/health`. */
  apiKey?: string | null;
  /** Fault injection for client tests: the next `dropCallStreams` call streams end after `task_id`. */
  faults?: { dropCallStreams?: number };
}

/** The app and its state. */
export interface OrsApp {
  /** Serves one request (bare paths routed as the reference's middleware does). */
  fetch(req: Request): Promise<Response>;
  readonly sessions: TaskSessions;
  /** Ends stale sessions and old calls (the server runs it every 5 s). */
  reap(): Promise<void>;
  close(): Promise<void>;
}

const ROOT_ROUTES = new Set([
  "",
  "health",
  "version",
  "ping",
  "list_environments",
  "environments",
  "create",
  "delete",
  "create_session",
  "delete_session",
]);

/**
 * The ORS app over tool environments (use {@link startOrsServer} to serve it on a port).
 *
 * @example
 * const app = createOrsApp({ environments: [wordProblems()] });
 * const res = await app.fetch(new Request("http://x/list_environments"));
 */
export function createOrsApp(opts: OrsAppOptions): OrsApp {
  if (opts.environments.length === 0) throw new Error("an ORS server needs an environment");
  const envs = new Map<string, ToolEnvironment>();
  for (const e of opts.environments) {
    const key = e.name.toLowerCase();
    if (envs.has(key)) throw new Error(`two environments are named ${JSON.stringify(e.name)}`);
    if (e.tools.length === 0 || e.splits.length === 0) {
      throw new Error(`environment ${e.name} needs at least one tool and one split`);
    }
    envs.set(key, e);
  }
  const first = [...envs.keys()][0];
  const sessions = new TaskSessions({
    staleMs: opts.staleMs ?? 900_000,
    lingerMs: opts.lingerMs ?? 60_000,
    maxSessions: opts.maxSessions ?? Infinity,
  });
  const pingMs = opts.pingMs ?? 10_000;
  const listLimit = opts.listLimit ?? 10_000;
  const faults = { dropCallStreams: opts.faults?.dropCallStreams ?? 0 };

  const envOf = (name: string | null | undefined): ToolEnvironment => {
    const e = envs.get((name ?? first).toLowerCase());
    if (!e) throw new HttpError(404, `unknown environment '${name}'`);
    return e;
  };
  const checkSplit = (e: ToolEnvironment, split: string) => {
    if (!e.splits.some((s) => s.name === split)) throw new HttpError(400, "Invalid split");
  };
  const taskAt = async (e: ToolEnvironment, split: string, index: number) => {
    checkSplit(e, split);
    try {
      return await e.getTask(split, index);
    } catch (err) {
      if (err instanceof RangeError) throw new HttpError(400, "Invalid index");
      throw err;
    }
  };

  const app = new Hono();
  jsonErrors(app, {
    body: (e) => ({ detail: e.message }),
    internal: (err) => `${err.name}: ${err.message}`,
  });
  if (opts.apiKey) {
    app.use("*", keyAuth({ key: opts.apiKey, header: "x-api-key", open: (p) => p === "/health" }));
  }

  app.get("/health", (c) => c.json({ status: "ok" }));
  app.get("/version", (c) => c.json({ version: "tinkerbench", build_sha: null }));
  app.get("/list_environments", (c) => c.json([...envs.keys()]));
  app.get("/environments", (c) =>
    c.json([...envs.values()].map((e): EnvironmentInfo => ({
      name: e.name.toLowerCase(),
      description: e.description,
      splits: [...e.splits],
      tools: e.tools.map((t) => t.name),
      registry_id: opts.registryIds?.[e.name] ?? null,
    }))));

  app.post(
    "/create_session",
    () => sseEventsResponse(sseEvent("task_id", sessions.issue()), sseEvent("end", "")),
  );
  app.post("/create", async (c) => {
    const sid = sidOf(c);
    const body = await readOrsBody(c, CreateBodySchema);
    const secrets = { ...secretsHeader(c), ...(body.secrets ?? {}) };
    const open = async (e: ToolEnvironment) => {
      if (body.task_spec == null) {
        return await e.open(await taskAt(e, body.split!, body.index!), secrets);
      }
      try {
        return await e.open(body.task_spec, secrets);
      } catch (err) {
        // A task spec is the client's: one the environment cannot open is its mistake (400).
        if (err instanceof HttpError) throw err;
        throw new HttpError(
          400,
          `task_spec does not describe a task of ${e.name}: ${(err as Error).message}`,
        );
      }
    };
    // The environment: env_name, else the gateway's X-Deployment, else (several served) the
    // first `/{env}/...` request's: the reference client sends no env_name with split + index.
    const named = body.env_name ?? deploymentEnv(c.req.header("X-Deployment"));
    const e = named ? envOf(named) : envs.size === 1 ? envOf(first) : null;
    if (e && body.task_spec == null) await taskAt(e, body.split!, body.index!); // 400s now
    sessions.create(sid, open, e);
    return c.json({ sid });
  });
  app.post("/ping", (c) => {
    sessions.ping(sidOf(c));
    return c.json({ status: "ok" });
  });
  app.post("/delete", async (c) => {
    const sid = sidOf(c);
    await sessions.end(sid);
    return c.json({ sid });
  });
  app.post("/delete_session", (c) => {
    const sid = sidOf(c);
    sessions.release(sid);
    return c.json({ sid });
  });

  app.get(
    "/:env/tools",
    (c) => c.json({ tools: envOf(c.req.param("env")).tools.map(toOrsToolSpec) }),
  );
  app.get("/:env/splits", (c) => c.json(envOf(c.req.param("env")).splits));
  app.post("/:env/tasks", async (c) => {
    const e = envOf(c.req.param("env"));
    const { split } = await readOrsBody(c, SplitBodySchema);
    checkSplit(e, split);
    let tasks: Record<string, unknown>[];
    if (e.listTasks) tasks = await e.listTasks(split);
    else {
      const n = await e.numTasks(split);
      if (n > listLimit) {
        throw new HttpError(
          400,
          `list_tasks is not supported for this environment (${n} tasks). Use the index-based ` +
            "API (num_tasks + get_task) instead.",
        );
      }
      tasks = await Promise.all(Array.from({ length: n }, (_, i) => e.getTask(split, i)));
    }
    return c.json({ tasks, env_name: c.req.param("env") });
  });
  app.post("/:env/num_tasks", async (c) => {
    const e = envOf(c.req.param("env"));
    const { split } = await readOrsBody(c, SplitBodySchema);
    checkSplit(e, split);
    return c.json({ num_tasks: await e.numTasks(split) });
  });
  app.post("/:env/task", async (c) => {
    const e = envOf(c.req.param("env"));
    const { split, index } = await readOrsBody(c, TaskBodySchema);
    return c.json({ task: await taskAt(e, split, index), env_name: c.req.param("env") });
  });
  app.post("/:env/task_range", async (c) => {
    const e = envOf(c.req.param("env"));
    const b = await readOrsBody(c, TaskRangeBodySchema);
    checkSplit(e, b.split);
    const [start, stop] = pySlice(await e.numTasks(b.split), b.start, b.stop);
    if (stop - start > listLimit) throw new HttpError(400, "Invalid index range");
    const tasks = await Promise.all(
      Array.from({ length: stop - start }, (_, i) => e.getTask(b.split, start + i)),
    );
    return c.json({ tasks, env_name: c.req.param("env") });
  });

  const sessionOf = (c: Context) => sessions.session(sidOf(c), envOf(c.req.param("env")));
  app.get("/:env/prompt", async (c) => {
    const s = await sessionOf(c);
    return c.json(await s.prompt());
  });
  app.get("/:env/task_tools", async (c) => {
    const s = await sessionOf(c);
    return c.json({ tools: (await s.tools()).map(toOrsToolSpec) });
  });
  app.post("/:env/call", async (c) => {
    const body = await readOrsBody(c, CallBodySchema);
    const s = await sessionOf(c);
    let task: CallTask | undefined;
    if (body.task_id) task = sessions.call(body.task_id, sidOf(c));
    else task = sessions.startCall(sidOf(c), s, body.name, body.input);
    const drop = faults.dropCallStreams > 0 && !body.task_id;
    if (drop) faults.dropCallStreams--;
    return callResponse(task, pingMs, drop);
  });

  /** The served environment a hosted deployment name (`Org/Env`) stands for, if any. */
  const deploymentEnv = (deployment: string | undefined): string | null => {
    if (!deployment) return null;
    const name = deployment.split("/").at(-1)!.toLowerCase();
    if (envs.has(name)) return name;
    return envs.has(deployment.toLowerCase()) ? deployment.toLowerCase() : null;
  };

  const fetch = (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const segment = url.pathname.replace(/^\/+/, "").split("/", 1)[0].toLowerCase();
    if (ROOT_ROUTES.has(segment) || envs.has(segment)) return Promise.resolve(app.fetch(req));
    // Bare paths: the hosted gateway routes on X-Deployment ("Org/Env"); the reference server
    // redirects everything else to its first environment.
    const deployment = req.headers.get("X-Deployment");
    if (deployment) {
      const key = deploymentEnv(deployment);
      if (!key) {
        return Promise.resolve(Response.json({ detail: "Deployment not found." }, { status: 404 }));
      }
      url.pathname = `/${key}${url.pathname}`;
      // A new request from parts: copying `req` whole would read its signal, which Deno's
      // server aborts once a response is sent (a warning per request).
      const init = { method: req.method, headers: req.headers, body: req.body };
      return Promise.resolve(app.fetch(new Request(url, init)));
    }
    // A relative Location: built from the request's Host, it would send clients wherever a
    // forged Host header says.
    const location = `/${first}${url.pathname}${url.search}`;
    return Promise.resolve(new Response(null, { status: 308, headers: { Location: location } }));
  };
  return {
    fetch,
    sessions,
    reap: () => sessions.reap(),
    close: () => sessions.closeAll(),
  };
}
