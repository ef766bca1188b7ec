import { assert } from "../../assert.ts";
import { fingerprint, RetryDedupe, SeqOrder } from "../../../lib/local/runtime/sequencer.ts";
import { UserInputError } from "../../../lib/local/errors.ts";

Deno.test("SeqOrder: releases in seq order whatever the arrival order", () => {
  const ran: number[] = [];
  const order = new SeqOrder();
  for (const s of [3, 1, 4, 2]) order.enqueue(s, () => ran.push(s));
  assert.deepEqual(ran, [1, 2, 3, 4]);
  assert.equal(order.next, 5);
  order.close();
});

Deno.test("SeqOrder: unnumbered (0) and old seq ids run at once", () => {
  const ran: number[] = [];
  const order = new SeqOrder();
  order.enqueue(0, () => ran.push(0));
  order.enqueue(2, () => ran.push(2));
  assert.deepEqual(ran, [0]);
  order.enqueue(1, () => ran.push(1));
  assert.deepEqual(ran, [0, 1, 2]);
  order.close();
});

Deno.test("SeqOrder: a gap that never fills is skipped after the timeout", async () => {
  const ran: number[] = [];
  const skipped: Array<[number, number]> = [];
  const order = new SeqOrder({ gapTimeoutMs: 20, onSkip: (a, b) => skipped.push([a, b]) });
  order.enqueue(3, () => ran.push(3));
  await new Promise((r) => setTimeout(r, 60));
  assert.deepEqual(ran, [3]);
  assert.deepEqual(skipped, [[1, 3]]);
  order.close();
});

Deno.test("RetryDedupe: same body returns the original id, a different body is a 409", async () => {
  const d = new RetryDedupe();
  const a = await fingerprint(new TextEncoder().encode('{"x":1}'));
  const b = await fingerprint(new TextEncoder().encode('{"x":2}'));
  assert.equal(d.lookup("m", 1, a), undefined);
  d.remember("m", 1, a, "req-1");
  assert.equal(d.lookup("m", 1, a), "req-1");
  assert.equal(d.lookup("other", 1, a), undefined);
  assert.throws(() => d.lookup("m", 1, b), (e) => e instanceof UserInputError && e.status === 409);
});
