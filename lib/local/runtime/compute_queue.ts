/**
 * The local engine runs one computation at a time (it already uses every core), so all work
 * goes through one FIFO queue. Sampling requests that target the same weights are merged into
 * one batch when they meet in the queue: with 32 rollouts in flight, one batched decode is far
 * cheaper than 32 separate ones. A queued task may say how it is answered if dropped: when a run
 * stops, the samples it will never read are dropped (see {@link ComputeQueue.dropQueued}) so the
 * work it still needs (the step in training, its checkpoint) runs next.
 *
 * A task starts only once the server's traffic has gone quiet (see `#settle`): a computation
 * holds the one JavaScript thread, and answers and requests on the sockets wait for its end.
 *
 * @module
 */

/** A task starts after this many timer turns in a row without traffic… */
const QUIET_TURNS = 2;
/** …or after this many turns, so that steady traffic cannot hold the queue up. */
const MAX_SETTLE_TURNS = 8;

type Task =
  | { type: "single"; run: () => Promise<void> }
  | {
    type: "batchable";
    key: string;
    rows: number;
    item: unknown;
    runBatch: (items: unknown[]) => Promise<void>;
    /** Answers the item when it is dropped unrun; absent: the item is never dropped. */
    drop?: (item: unknown, reason: Error) => void;
  };

/** A serial work queue with batching of compatible tasks. */
export class ComputeQueue {
  #tasks: Task[] = [];
  #running = false;
  /** Tasks pushed and requests seen so far (see #settle). */
  #traffic = 0;
  #idle: Array<() => void> = [];
  /** Most rows a batched job may carry. */
  readonly maxBatchRows: number;

  /** `maxBatchRows` caps how many rows (e.g. samples) one merged batch may hold. */
  constructor({ maxBatchRows = 64 }: { maxBatchRows?: number } = {}) {
    this.maxBatchRows = maxBatchRows;
  }

  /** Number of tasks waiting (not counting the one running). */
  get pending(): number {
    return this.#tasks.length;
  }

  /** Queues a task that runs alone. Errors must be handled inside `run`. */
  push(run: () => Promise<void>): void {
    this.#tasks.push({ type: "single", run });
    this.#traffic++;
    this.#pump();
  }

  /**
   * Queues an item that may run together with other items of the same `key`. `runBatch` of the
   * first item of a batch receives all merged items (at most `maxBatchRows` rows in total).
   * With `drop`, the item may be dropped unrun by {@link dropQueued}, and `drop` answers it.
   */
  pushBatchable<T>(
    key: string,
    item: T,
    rows: number,
    runBatch: (items: T[]) => Promise<void>,
    drop?: (item: T, reason: Error) => void,
  ): void {
    this.#tasks.push({
      type: "batchable",
      key,
      rows,
      item,
      runBatch: runBatch as (items: unknown[]) => Promise<void>,
      drop: drop as ((item: unknown, reason: Error) => void) | undefined,
    });
    this.#traffic++;
    this.#pump();
  }

  /**
   * Drops every queued item that was given a `drop` answer (the one running finishes), answering
   * each with `reason`; the rest of the queue keeps its order. Returns how many were dropped.
   */
  dropQueued(reason: Error): number {
    const dropped = this.#tasks.filter((t) => t.type === "batchable" && t.drop);
    this.#tasks = this.#tasks.filter((t) => !(t.type === "batchable" && t.drop));
    for (const t of dropped) {
      if (t.type !== "batchable") continue;
      try {
        t.drop!(t.item, reason);
      } catch (e) {
        console.error("compute queue: dropping a task threw", e);
      }
    }
    return dropped.length;
  }

  /** Resolves when the queue is empty and nothing is running. */
  idle(): Promise<void> {
    if (!this.#running && this.#tasks.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #pump(): void {
    if (this.#running) return;
    this.#running = true;
    void this.#loop();
  }

  /**
   * Notes a request arriving or being answered: the server's HTTP layer calls it, so that the
   * next task waits for the traffic to go quiet.
   */
  noteTraffic(): void {
    this.#traffic++;
  }

  /**
   * Waits, before a task, until two timer turns in a row saw no traffic (eight turns at most).
   * ONNX Runtime's runs are synchronous, chained through `setImmediate`, and while they chain
   * the runtime does not poll its sockets. A request answered just before a task would leave
   * only at its end, and the client's next request (the poll of that answer, whose latency
   * would overlap the task) would arrive only then: the latency would add to the task instead.
   * Measured with `deno task bench pipeline` (docs/learner.md). Requests arriving together
   * also batch.
   */
  async #settle(): Promise<void> {
    let quiet = 0;
    for (let turn = 0; turn < MAX_SETTLE_TURNS && quiet < QUIET_TURNS; turn++) {
      const seen = this.#traffic;
      await new Promise((r) => setTimeout(r, 0));
      quiet = this.#traffic === seen ? quiet + 1 : 0;
    }
  }

  async #loop(): Promise<void> {
    while (this.#tasks.length > 0) {
      await this.#settle();
      const head = this.#tasks.shift()!;
      try {
        if (head.type === "single") await head.run();
        else await head.runBatch(this.#takeBatch(head));
      } catch (e) {
        // Tasks settle their own futures; reaching here is a bug, never a reason to stop.
        console.error("compute queue: task threw", e);
      }
    }
    this.#running = false;
    for (const w of this.#idle.splice(0)) w();
  }

  #takeBatch(head: Extract<Task, { type: "batchable" }>): unknown[] {
    const items = [head.item];
    let rows = head.rows;
    for (let i = 0; i < this.#tasks.length;) {
      const t = this.#tasks[i];
      if (t.type === "batchable" && t.key === head.key && rows + t.rows <= this.maxBatchRows) {
        items.push(t.item);
        rows += t.rows;
        this.#tasks.splice(i, 1);
      } else i++;
    }
    return items;
  }
}
