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
