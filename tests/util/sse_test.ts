/** The one SSE reader (lib/util/sse.ts): line ends, chunk boundaries, comments, large chunks. */

import { assert } from "../assert.ts";
import { readSse, type SseMessage } from "../../lib/util/sse.ts";

function body(chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return ReadableStream.from(chunks.map((c) => (typeof c === "string" ? enc.encode(c) : c)));
}

async function read(chunks: (string | Uint8Array)[]): Promise<SseMessage[]> {
  return await Array.fromAsync(readSse(body(chunks)));
}

Deno.test("sse: LF, CRLF and CR-only line ends read the same", async () => {
  const text = "event: chunk\ndata: a\ndata:  b\n\n: ping\n\ndata: plain\n\n";
  const want: SseMessage[] = [
    { type: "event", event: "chunk", data: "a\n b" },
    { type: "comment", text: "ping" },
    { type: "event", event: "message", data: "plain" },
  ];
  assert.deepEqual(await read([text]), want);
  assert.deepEqual(await read([text.replaceAll("\n", "\r\n")]), want);
  assert.deepEqual(await read([text.replaceAll("\n", "\r")]), want, "CR alone ends a line");
});

Deno.test("sse: a message split anywhere, even inside a CRLF or a UTF-8 character, reads whole", async () => {
  const bytes = new TextEncoder().encode("event: end\r\ndata: é✓\r\n\r\n");
  for (let cut = 1; cut < bytes.length; cut++) {
    assert.deepEqual(await read([bytes.slice(0, cut), bytes.slice(cut)]), [
      { type: "event", event: "end", data: "é✓" },
    ], `cut at ${cut}`);
  }
});

Deno.test("sse: a large chunk of many events is read in one pass", async () => {
  const n = 20_000;
  const text = Array.from({ length: n }, (_, i) => `event: chunk\r\ndata: ${i}\r\n\r\n`).join("");
  const out = await read([text]);
  assert.equal(out.length, n);
  assert.deepEqual(out.at(-1), { type: "event", event: "chunk", data: String(n - 1) });
});

Deno.test("sse: a reader that stops early releases the body", async () => {
  const stream = body(["data: 1\n\n", "data: 2\n\n"]);
  for await (const _ of readSse(stream)) break;
  assert.equal(stream.locked, false);
});
