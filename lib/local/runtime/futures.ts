/**
 * Futures of the local backend: every queued operation gets a `request_id` at once, and its
 * result is fetched later through `retrieve_future`, which long-polls here.
 *
 * @module
 */

import { UserInputError } from "../errors.ts";
import { InvalidTinkerPathError } from "../../protocol/paths.ts";

/** The kinds of result a future can hold; the HTTP layer picks the wire encoding from it. */
export type FutureKind =
  | "create_model"
  | "forward_backward"
  | "optim_step"
  | "save_weights"
  | "save_weights_for_sampler"
  | "load_weights"
  | "unload_model"
  | "sample";

/** Where a future is in its life. */
export type FutureState<T = unknown> =
  | { status: "pending"; kind: FutureKind }
  | { status: "done"; kind: FutureKind; value: T }
  | { status: "failed"; kind: FutureKind; error: string; category: "user" | "server" };

interface Entry {
  state: FutureState;
  waiters: Array<() => void>;
  settledAt?: number;
  /** When a client was first given the settled state. */
  deliveredAt?: number;
}

/**
 * Holds pending and settled futures. Settled results are kept for `retentionMs` (10 minutes by
 * default) so that a client whose response was lost can poll again, and for `deliveredRetentionMs`
 * (1 minute) once a client has been given them, which is enough for a retry of a lost response;
 * after that the id answers "expired" (410) and the client resubmits. Keeping delivered results
 * the full 10 minutes held every result of the last 10 minutes of an RL run (log-probs, samples)
 * in memory.
 */
export class FutureStore {
  #entries = new Map<string, Entry>();
  #next = 1;
  /** How long an unretrieved result is kept, in ms. */
  readonly retentionMs: number;
  /** How long a retrieved result is kept (for a retried retrieve), in ms. */
  readonly deliveredRetentionMs: number;

  /** A store keeping results for the given times (default 10 min unretrieved, 1 min retrieved). */
  constructor(
    { retentionMs = 10 * 60 * 1000, deliveredRetentionMs = 60 * 1000 }: {
      retentionMs?: number;
      deliveredRetentionMs?: number;
    } = {},
  ) {
    this.retentionMs = retentionMs;
    this.deliveredRetentionMs = Math.min(deliveredRetentionMs, retentionMs);
  }

  /** Creates a pending future and returns its request id. */
  create(kind: FutureKind): string {
    this.#sweep();
    const id = String(this.#next++);
    this.#entries.set(id, { state: { status: "pending", kind }, waiters: [] });
    return id;
  }

  /** Resolves a future with its result value. */
  resolve(id: string, value: unknown): void {
    this.#settle(id, (kind) => ({ status: "done", kind, value }));
  }

  /**
   * Turns a server-side failure into the message the client sees (e.g. one line naming a log
   * file that keeps the stack); the error's own message when unset.
   */
  describeServerError?: (err: unknown) => string;

  /**
   * Fails a future; a {@link UserInputError} is the client's fault, anything else the server's
   * (a {@link ShuttingDownError} is said as it is: nothing failed, so nothing is logged).
   */
  reject(id: string, err: unknown): void {
    const user = err instanceof UserInputError || err instanceof InvalidTinkerPathError;
    const error = !user && !(err instanceof ShuttingDownError) && this.describeServerError
      ? this.describeServerError(err)
      : err instanceof Error
      ? err.message
      : String(err);
    this.#settle(
      id,
      (kind) => ({ status: "failed", kind, error, category: user ? "user" : "server" }),
    );
  }

  /** Runs `work` and settles the future with its outcome. */
  async settleWith(id: string, work: () => Promise<unknown>): Promise<void> {
    try {
      this.resolve(id, await work());
    } catch (e) {
      this.reject(id, e);
    }
  }

  /**
   * Waits until the future settles or `timeoutMs` passes, then returns its state
   * (still `pending` on timeout). Unknown ids throw a 404, expired ones a 410.
   */
  async wait(id: string, timeoutMs: number, signal?: AbortSignal): Promise<FutureState> {
    const entry = this.#entries.get(id);
    if (!entry) {
      if (this.#wasIssued(id)) {
        throw new ExpiredFutureError(`request ${id} has expired; submit it again`);
      }
      throw new UserInputError(`unknown request_id ${JSON.stringify(id)}`, 404);
    }
    if (entry.state.status !== "pending") return this.#deliver(entry);
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal?.addEventListener("abort", done);
      entry.waiters.push(done);
    });
    return entry.state.status === "pending" ? entry.state : this.#deliver(entry);
  }

  /** The current state without waiting, or undefined for an unknown id. */
  peek(id: string): FutureState | undefined {
    return this.#entries.get(id)?.state;
  }

  #settle(id: string, make: (kind: FutureKind) => FutureState): void {
    const entry = this.#entries.get(id);
    if (!entry || entry.state.status !== "pending") return;
    entry.state = make(entry.state.kind);
    entry.settledAt = Date.now();
    for (const w of entry.waiters.splice(0)) w();
  }

  /**
   * Whether this store issued `id` (ids count up from 1), so a missing one has expired. Derived
   * rather than remembered: a set of expired ids grew by every request of a long run.
   */
  #wasIssued(id: string): boolean {
    const n = Number(id);
    return Number.isInteger(n) && n >= 1 && n < this.#next && String(n) === id;
  }

  #deliver(entry: Entry): FutureState {
    entry.deliveredAt ??= Date.now();
    return entry.state;
  }

  #sweep(): void {
    const now = Date.now();
    const cutoff = now - this.retentionMs, deliveredCutoff = now - this.deliveredRetentionMs;
    for (const [id, e] of this.#entries) {
      if (
        (e.settledAt !== undefined && e.settledAt < cutoff) ||
        (e.deliveredAt !== undefined && e.deliveredAt < deliveredCutoff)
      ) {
        this.#entries.delete(id);
      }
    }
  }
}

/** A future that existed but whose result was dropped after the retention period (HTTP 410). */
export class ExpiredFutureError extends Error {
  override name = "ExpiredFutureError";
}

/**
 * A request dropped unrun because the backend is stopping its sampling (the run that asked for
 * it is stopping: Ctrl-C, SIGTERM, or the server closing). Its future fails with this message.
 */
export class ShuttingDownError extends Error {
  override name = "ShuttingDownError";
}
