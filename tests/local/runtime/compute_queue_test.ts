import { assert } from "../../assert.ts";
import { ComputeQueue } from "../../../lib/local/runtime/compute_queue.ts";

Deno.test("ComputeQueue: runs tasks one at a time in FIFO order", async () => {
  const q = new ComputeQueue();
  const log: string[] = [];
  let running = 0;
  for (const name of ["a", "b", "c"]) {
    q.push(async () => {
      running++;
      assert.equal(running, 1, "never two tasks at once");
      await new Promise((r) => setTimeout(r, 5));
      log.push(name);
      running--;
    });
  }
  await q.idle();
  assert.deepEqual(log, ["a", "b", "c"]);
});

Deno.test("ComputeQueue: batchable items with the same key merge, up to the row cap", async () => {
  const q = new ComputeQueue({ maxBatchRows: 4 });
  const batches: string[][] = [];
  const run = (items: string[]) => {
    batches.push(items);
    return Promise.resolve();
  };
  q.pushBatchable("w1", "s1", 2, run);
  q.pushBatchable("w2", "t1", 1, run);
  q.pushBatchable("w1", "s2", 2, run);
  q.pushBatchable("w1", "s3", 1, run);
  await q.idle();
  assert.deepEqual(batches, [["s1", "s2"], ["t1"], ["s3"]]);
});

Deno.test("ComputeQueue: a throwing task does not stop the queue", async () => {
  const q = new ComputeQueue();
  const errors = console.error;
  console.error = () => {};
  let ran = false;
  q.push(() => Promise.reject(new Error("boom")));
  q.push(() => Promise.resolve(void (ran = true)));
  await q.idle();
  console.error = errors;
  assert.ok(ran);
});

Deno.test("ComputeQueue: dropQueued answers the droppable items unrun; the rest keep their order", async () => {
  const q = new ComputeQueue();
  const ran: string[] = [];
  const dropped: string[] = [];
  const { promise: release, resolve } = Promise.withResolvers<void>();
  const run = (items: string[]) => {
    ran.push(...items);
    return items.includes("first") ? release : Promise.resolve();
  };
  const drop = (item: string, reason: Error) => dropped.push(`${item}: ${reason.message}`);
  q.pushBatchable("w", "first", 1, run, drop);
  await new Promise((r) => setTimeout(r, 10)); // "first" is running now
  q.pushBatchable("w", "sample", 1, run, drop);
  q.push(() => Promise.resolve(void ran.push("train")));
  q.pushBatchable("w", "score", 1, run); // no drop answer: never dropped
  q.pushBatchable("v", "other", 1, run, drop);
  assert.equal(q.dropQueued(new Error("stopping")), 2);
  assert.deepEqual(dropped, ["sample: stopping", "other: stopping"]);
  assert.equal(q.pending, 2);
  resolve();
  await q.idle();
  assert.deepEqual(ran, ["first", "train", "score"], "the running item finished; none dropped ran");
});

const turn = () => new Promise((r) => setTimeout(r, 0));

Deno.test("ComputeQueue: a task waits until the server's traffic goes quiet", async () => {
  const q = new ComputeQueue();
  const log: string[] = [];
  q.push(() => Promise.resolve(void log.push("task")));
  // A request answered, its client's next request arriving: traffic on three turns in a row.
  for (let i = 0; i < 3; i++) {
    q.noteTraffic();
    log.push(`traffic ${i}`);
    await turn();
  }
  await q.idle();
  assert.deepEqual(log, ["traffic 0", "traffic 1", "traffic 2", "task"]);
});

Deno.test("ComputeQueue: steady traffic does not hold a task up", async () => {
  const q = new ComputeQueue();
  let ran = false;
  q.push(() => Promise.resolve(void (ran = true)));
  // Traffic on every turn, for longer than the queue waits.
  for (let i = 0; i < 50 && !ran; i++) {
    q.noteTraffic();
    await turn();
  }
  assert.ok(ran, "the task ran while the traffic went on");
  await q.idle();
});

Deno.test("ComputeQueue: requests arriving on the turns before a batch join it", async () => {
  const q = new ComputeQueue();
  const batches: string[][] = [];
  const run = (items: string[]) => Promise.resolve(void batches.push(items));
  q.pushBatchable("w", "a", 1, run);
  await turn();
  q.pushBatchable("w", "b", 1, run);
  await q.idle();
  assert.deepEqual(batches, [["a", "b"]]);
});
