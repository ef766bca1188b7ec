/**
 * The ORS server's state: sessions (an id from `create_session`, then a task session opened in
 * the background by `create`, which every later call waits for) and tool-call tasks (a `call`
 * runs as a task that outlives its HTTP stream, so a client whose connection dropped reattaches
 * with its `task_id`; finished tasks linger for a while). An idle reaper ends stale sessions.
 *
 * @module
 */

import type { RunToolOutput, TaskSession, ToolEnvironment } from "../envs/tool_env.ts";
import { HttpError } from "../http/errors.ts";

/** Opens a session's task in an environment (which `create` may leave to the first route). */
export type TaskOpener = (env: ToolEnvironment) => Promise<TaskSession>;

/** One session after `create`. */
interface Active {
  open: TaskOpener;
  /** Set once the environment is known: at `create`, or at the first `/{env}/...` request. */
  ready?: Promise<TaskSession>;
}

/** A tool call running (or finished) on the server. */
export interface CallTask {
  id: string;
  /** The session that started it: only that session may reattach. */
  sid: string;
  /** Settles when the call is done (never rejects). */
  done: Promise<void>;
  /** The `RunToolOutput` JSON, or the message of the exception the tool threw. */
  result?: string;
  error?: string;
  completedAt?: number;
}

/** Timings of the session table. */
export interface TaskSessionsOptions {
  /** A session idle this long is ended (default 900 s, the reference server's). */
  staleMs: number;
  /** Finished calls are kept this long for reattaching clients (default 60 s). */
  lingerMs: number;
  /** At most this many sessions at once; `create_session` or `create` beyond is a 429. */
  maxSessions: number;
}

/** Ended sessions remembered (for their 410s) at most; older ones are forgotten first. */
const MAX_ENDED = 10_000;

/** The ORS task sessions and tool-call tasks of one server. */
export class TaskSessions {
  readonly #opts: TaskSessionsOptions;
  /** Every issued session id, with its last activity. */
  readonly #lastSeen = new Map<string, number>();
  readonly #active = new Map<string, Active>();
  /**
   * Ended sessions with the time they ended, so their calls get 410 instead of 404; forgotten
   * after the stale time (and past {@link MAX_ENDED}), so the table cannot grow without end.
   */
  readonly #ended = new Map<string, number>();
  readonly #calls = new Map<string, CallTask>();
  /** Counters for tests and benchmarks. */
  readonly stats = { created: 0, ended: 0, calls: 0, reattached: 0, rejected: 0 };

  constructor(opts: TaskSessionsOptions) {
    this.#opts = opts;
  }

  /** Ended sessions still remembered (their calls answer 410). */
  get ended(): number {
    return this.#ended.size;
  }

  /** Sessions issued and not ended. */
  get open(): number {
    return this.#lastSeen.size;
  }

  /** A new session id (`create_session`); a 429 at capacity. */
  issue(): string {
    this.#checkRoom();
    const sid = crypto.randomUUID();
    this.#lastSeen.set(sid, performance.now());
    return sid;
  }

  /**
   * `create`: opens the task's session in the background when its environment is known (later
   * calls wait for it), else at the first `/{env}/...` request, in that environment.
   */
  create(sid: string, open: TaskOpener, env: ToolEnvironment | null): void {
    if (this.#active.has(sid)) throw new HttpError(400, "Session already exists");
    // Clients may choose their own X-Session-ID without create_session: the cap holds for
    // those too.
    if (!this.#lastSeen.has(sid)) this.#checkRoom();
    this.#lastSeen.set(sid, performance.now());
    this.#ended.delete(sid);
    const entry: Active = { open };
    if (env) entry.ready = open(env);
    entry.ready?.catch(() => {}); // kept for the calls that wait on it
    this.#active.set(sid, entry);
    this.stats.created++;
  }

  /**
   * The ready session of `sid` (opened in `env` if `create` left it open): 404 unknown, 410
   * ended, setup failures rethrown.
   */
  #checkRoom(): void {
    if (this.#lastSeen.size >= this.#opts.maxSessions) {
      this.stats.rejected++;
      throw new HttpError(
        429,
        `environment at maximum capacity (${this.#opts.maxSessions} sessions); retry later`,
        { "retry-after": "5" },
      );
    }
  }

  async session(sid: string, env: ToolEnvironment): Promise<TaskSession> {
    const entry = this.#active.get(sid);
    if (!entry) {
      if (this.#ended.has(sid)) throw new HttpError(410, "Session deleted");
      throw new HttpError(404, "Active environment not found");
    }
    this.#lastSeen.set(sid, performance.now());
    entry.ready ??= entry.open(env);
    return await entry.ready;
  }

  /** `ping`: 404 when the session is not active. */
  ping(sid: string): void {
    if (!this.#active.has(sid)) throw new HttpError(404, "Active environment not found");
    this.#lastSeen.set(sid, performance.now());
  }

  /** `delete`: tears the task session down (idempotent). */
  async end(sid: string): Promise<void> {
    this.#lastSeen.delete(sid);
    const entry = this.#active.get(sid);
    if (!entry) return;
    this.#active.delete(sid);
    this.#ended.set(sid, performance.now());
    for (const old of this.#ended.keys()) {
      if (this.#ended.size <= MAX_ENDED) break;
      this.#ended.delete(old);
    }
    this.stats.ended++;
    try {
      await (await entry.ready)?.close?.();
    } catch { /* a failed setup or teardown leaves nothing to tear down */ }
  }

  /** `delete_session`: forgets an id that never got a task. */
  release(sid: string): void {
    if (!this.#active.has(sid)) this.#lastSeen.delete(sid);
  }

  /** Starts a tool call as a task. */
  startCall(sid: string, session: TaskSession, name: string, input: unknown): CallTask {
    const task: CallTask = {
      id: crypto.randomUUID().replaceAll("-", ""),
      sid,
      done: Promise.resolve(),
    };
    task.done = Promise.resolve()
      .then(() => session.call(name, input))
      .then(
        (r: RunToolOutput) => void (task.result = JSON.stringify(r)),
        (e) => void (task.error = e instanceof Error ? e.message : String(e)),
      )
      .finally(() => (task.completedAt = performance.now()));
    this.#calls.set(task.id, task);
    this.stats.calls++;
    return task;
  }

  /**
   * A call task of session `sid` to reattach to, or undefined when unknown, evicted, or
   * another session's (which is not told apart from unknown).
   */
  call(taskId: string, sid: string): CallTask | undefined {
    const t = this.#calls.get(taskId);
    if (!t || t.sid !== sid) return undefined;
    this.stats.reattached++;
    return t;
  }

  /** Ends stale sessions and forgets calls finished longer ago than the linger time. */
  async reap(now = performance.now()): Promise<void> {
    for (const [id, t] of this.#calls) {
      if (t.completedAt !== undefined && now - t.completedAt > this.#opts.lingerMs) {
        this.#calls.delete(id);
      }
    }
    for (const [sid, at] of this.#ended) {
      if (now - at > this.#opts.staleMs) this.#ended.delete(sid);
    }
    const stale = [...this.#lastSeen].filter(([, seen]) => now - seen > this.#opts.staleMs);
    await Promise.all(stale.map(([sid]) => this.end(sid)));
  }

  /** Ends every session (server shutdown). */
  async closeAll(): Promise<void> {
    await Promise.all([...this.#lastSeen.keys(), ...this.#active.keys()].map((s) => this.end(s)));
    await Promise.all([...this.#calls.values()].map((t) => t.done));
  }
}
