/**
 * Server-sent events as the Open Reward Standard writes them (they are read with
 * lib/util/sse.ts, the one SSE reader): `create_session` and `call` answer
 * with named events (`task_id`, `chunk`, `end`, `error`) and `: ping` comments while a tool runs.
 * Lines end in `\r\n`, as sse-starlette writes them.
 *
 * The reference Python client left-strips every value and strips `\r\n` off every line, so a
 * result is cut into chunks whose data never starts with whitespace (a chunk boundary before a
 * space would lose the space), and never splits a UTF-16 surrogate pair.
 *
 * @module
 */

/** Size of a `/call` result's chunks, as the reference server cuts them. */
export const CHUNK_SIZE = 4096;

const encoder = new TextEncoder();

/** One event, as bytes. `data` must not hold a newline (JSON results never do). */
export function sseEvent(event: string, data: string): Uint8Array<ArrayBuffer> {
  if (/[\r\n]/.test(data)) throw new Error(`SSE data of ${event} holds a line break`);
  return encoder.encode(`event: ${event}\r\ndata: ${data}\r\n\r\n`);
}

/** A keep-alive comment. */
export function ssePing(): Uint8Array<ArrayBuffer> {
  return encoder.encode(`: ping - ${new Date().toISOString()}\r\n\r\n`);
}

/**
 * A result cut into chunks of about `size` characters for `chunk` events (the last one goes in
 * `end`): a boundary moves past whitespace and never splits a surrogate pair.
 *
 * @example
 * chunkResult('{"a": 1}', 5); // ['{"a": ', '1}'], not ['{"a":', ' 1}'] (the space would be lost)
 */
export function chunkResult(text: string, size = CHUNK_SIZE): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    let end = Math.min(text.length, i + size);
    while (end < text.length && (/\s/.test(text[end]) || isLowSurrogate(text, end))) end++;
    out.push(text.slice(i, end));
    i = end;
  }
  return out.length ? out : [""];
}

function isLowSurrogate(s: string, i: number): boolean {
  const c = s.charCodeAt(i);
  return c >= 0xdc00 && c <= 0xdfff;
}
