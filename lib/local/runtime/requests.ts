/**
 * Accepting requests as futures: a request gets its `request_id` at once and runs later on
 * the one {@link ComputeQueue}; a retry of a numbered request (same key, seq id and body) gets
 * the original id back instead of running twice.
 *
 * @module
 */

import { type FutureKind, FutureStore } from "./futures.ts";
import { ComputeQueue } from "./compute_queue.ts";
import { RetryDedupe } from "./sequencer.ts";

/** How a request is accepted by {@link Requests.accept}. */
export interface Acceptance {
  /** What the retry dedupe remembers the request under: a model or sampling-session id. */
  key: string;
  /** The request's seq id; requests without one are never deduped. */
  seqId?: number;
  /** Fingerprint of the request body. */
  print: string;
  /** The kind of result the future holds. */
  kind: FutureKind;
  /** Throws on bad input before a future exists (retries skip it: they were checked). */
  validate(): void;
  /** Queues the work that settles future `requestId`. */
  schedule(requestId: string): void;
}

/**
 * The futures, the compute queue and the retry dedupe of one backend.
 *
 * @example
 * const requests = new Requests();
 * const id = requests.run("unload_model", async () => ({ type: "unload_model" }));
 * await requests.futures.wait(id, 1_000);
 */
export class Requests {
  readonly futures = new FutureStore();
  readonly queue = new ComputeQueue();
  readonly dedupe = new RetryDedupe();

  /** Runs `work` on the compute queue, in arrival order, as a future of `kind`. */
  run(kind: FutureKind, work: () => Promise<unknown>): string {
    const id = this.futures.create(kind);
    this.queue.push(() => this.futures.settleWith(id, work));
    return id;
  }

  /** Accepts a request: the original id for a retry, else validates and schedules a new one. */
  accept(a: Acceptance): string {
    if (a.seqId !== undefined) {
      const dup = this.dedupe.lookup(a.key, a.seqId, a.print);
      if (dup) return dup;
    }
    a.validate();
    const id = this.futures.create(a.kind);
    if (a.seqId !== undefined) this.dedupe.remember(a.key, a.seqId, a.print, id);
    a.schedule(id);
    return id;
  }
}
