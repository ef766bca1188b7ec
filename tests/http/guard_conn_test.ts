/**
 * The front's request tracker (lib/http/guard_conn.ts) follows requests however the client's
 * bytes are cut into chunks: it knows when headers are awaited and when a whole request waits
 * for its answer.
 */

import { assert } from "../assert.ts";
import { RequestTracker } from "../../lib/http/guard_conn.ts";

const enc = new TextEncoder();

/** Feeds `text` in chunks of `size` bytes (0: in one piece); the states after each chunk. */
function feed(t: RequestTracker, text: string, size = 0) {
  const bytes = enc.encode(text);
  const step = size || bytes.length;
  const states: { headers: boolean; awaiting: boolean; ok: boolean }[] = [];
  for (let i = 0; i < bytes.length; i += step) {
    const ok = t.feed(bytes.slice(i, i + step), 1);
    states.push({ headers: t.headersSince !== undefined, awaiting: t.awaitingAnswer, ok });
  }
  return states;
}

const GET = "GET / HTTP/1.1\r\nhost: x\r\n\r\n";
const POST = "POST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhello";
const CHUNKED = "POST /a HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";

for (const size of [0, 1, 3, 7]) {
  Deno.test(`guard_conn: requests cut into ${size || "whole"}-byte chunks are followed to their end`, () => {
    for (const request of [GET, POST, CHUNKED, `\r\n${GET}`]) {
      const t = new RequestTracker(0);
      const states = feed(t, request, size);
      assert.ok(states.every((s) => s.ok));
      assert.deepEqual(states.at(-1), { headers: false, awaiting: true, ok: true }, request);
      // Before its last byte the request is not whole.
      if (states.length > 1) assert.equal(states.at(-2)!.awaiting, false, request);
      t.answering();
      assert.equal(t.awaitingAnswer, false);
      // The next request on the connection starts its own header clock.
      feed(t, "GET", size);
      assert.equal(t.headersSince, 1);
      feed(t, GET.slice(3), size);
      assert.equal(t.headersSince, undefined);
      assert.equal(t.awaitingAnswer, true);
    }
  });
}

Deno.test("guard_conn: headers still open are awaited; a header block over 64 KiB is refused", () => {
  const t = new RequestTracker(0);
  feed(t, "GET / HTTP/1.1\r\nhost: x\r\n");
  assert.equal(t.headersSince, 0);
  assert.equal(t.awaitingAnswer, false);
  const big = new RequestTracker(0);
  const states = feed(big, `GET / HTTP/1.1\r\nx: ${"a".repeat(70_000)}\r\n\r\n`, 4096);
  assert.equal(states.at(-1)!.ok, false);
});
