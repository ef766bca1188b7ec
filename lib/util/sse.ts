/**
 * Reading server-sent events: the one reader every client here uses, built on
 * `eventsource-parser` (the WHATWG rules: `\r\n`, `\n` and `\r` alone all end a line, data lines
 * join with `\n`, one space after the colon is dropped), fed chunk by chunk, so a large chunk is
 * read in one pass.
 *
 * @module
 */

import { createParser } from "eventsource-parser";

/** A parsed SSE message: an event (named, or `message` when it names none), or a comment. */
export type SseMessage =
  | { type: "event"; event: string; data: string; id?: string }
  | { type: "comment"; text: string };

/**
 * The messages of a response body, in order; the body is released when the loop ends early.
 *
 * @example
 * for await (const m of readSse(res.body!)) if (m.type === "event") console.log(m.event, m.data);
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  let ready: SseMessage[] = [];
  const parser = createParser({
    onEvent: (e) =>
      ready.push({
        type: "event",
        event: e.event ?? "message",
        data: e.data,
        ...(e.id === undefined ? {} : { id: e.id }),
      }),
    onComment: (text) => ready.push({ type: "comment", text: text.trim() }),
  });
  let lastChar = "";
  const reader = body.getReader();
  try {
    while (true) {
      const { value, done } = await reader.read();
      const text = done ? decoder.decode() : decoder.decode(value, { stream: true });
      parser.feed(text);
      if (text) lastChar = text.at(-1)!;
      // The parser holds a CR at the end of the input (a CRLF could be split there); at the
      // end of the stream it is a line end, as an LF would be.
      if (done && lastChar === "\r") parser.feed("\n");
      const batch = ready;
      ready = [];
      yield* batch;
      if (done) break;
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}
