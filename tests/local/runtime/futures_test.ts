import { assert } from "../../assert.ts";
import { ExpiredFutureError, FutureStore } from "../../../lib/local/runtime/futures.ts";
import { UserInputError } from "../../../lib/local/errors.ts";

Deno.test("FutureStore: a pending future long-polls until resolved", async () => {
  const store = new FutureStore();
  const id = store.create("optim_step");
  setTimeout(() => store.resolve(id, { ok: 1 }), 20);
  // A wait that timed out answers "pending" (next test): "done" is the resolve waking it.
  const state = await store.wait(id, 60_000);
  assert.equal(state.status, "done");
  assert.deepEqual(state.status === "done" && state.value, { ok: 1 });
});

Deno.test("FutureStore: wait times out as pending", async () => {
  const store = new FutureStore();
  const id = store.create("sample");
  assert.equal((await store.wait(id, 10)).status, "pending");
});

Deno.test("FutureStore: user errors and server errors get their category", async () => {
  const store = new FutureStore();
  const a = store.create("forward_backward"), b = store.create("forward_backward");
  store.reject(a, new UserInputError("bad tokens"));
  store.reject(b, new Error("engine exploded"));
  assert.deepEqual(await store.wait(a, 0), {
    status: "failed",
    kind: "forward_backward",
    error: "bad tokens",
    category: "user",
  });
  const sb = await store.wait(b, 0);
  assert.equal(sb.status === "failed" && sb.category, "server");
});

Deno.test("FutureStore: unknown ids are a 404, expired ids a 410", async () => {
  const store = new FutureStore({ retentionMs: 0 });
  await assert.rejects(
    () => store.wait("nope", 0),
    (e) => e instanceof UserInputError && e.status === 404,
  );
  const id = store.create("sample");
  store.resolve(id, {});
  await new Promise((r) => setTimeout(r, 2));
  store.create("sample"); // creating sweeps settled futures past retention
  await assert.rejects(() => store.wait(id, 0), ExpiredFutureError);
});

Deno.test("FutureStore: a delivered result is kept deliveredRetentionMs (a retry still gets it), an undelivered one retentionMs", async () => {
  const store = new FutureStore({ retentionMs: 60_000, deliveredRetentionMs: 5 });
  const delivered = store.create("forward_backward"), waiting = store.create("forward_backward");
  store.resolve(delivered, { loss: 1 });
  store.resolve(waiting, { loss: 2 });
  assert.equal((await store.wait(delivered, 0)).status, "done");
  assert.equal((await store.wait(delivered, 0)).status, "done", "a retry right away is served");
  await new Promise((r) => setTimeout(r, 10));
  store.create("sample"); // sweeps
  await assert.rejects(() => store.wait(delivered, 0), ExpiredFutureError);
  assert.equal((await store.wait(waiting, 0)).status, "done", "never delivered: still kept");
});
