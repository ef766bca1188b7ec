/**
 * What a client is told when the local backend itself fails (not the client's input): one
 * line saying what went wrong and where the details are. The stack trace goes to a log file in
 * the backend's data directory, so a command-line user sees a sentence, and whoever debugs it
 * finds the trace.
 *
 * @module
 */

import { HEAP_LIMIT_BYTES, heapBytes } from "../heap.ts";

/** Name of the failure log inside the backend's data directory. */
export const FAILURE_LOG_NAME = "backend.log";

/** Whether `err` is jax-js running out of its wasm heap. */
export function isOutOfMemory(err: unknown): boolean {
  return err instanceof RangeError &&
    /memory32 limit|Out of memory|WebAssembly\.Memory\.grow/i.test(err.message);
}

/**
 * Appends `err` (with its stack) to the log at `logPath` and returns the one-line message for
 * the client: out of memory names the settings that size the work; anything else names the log.
 *
 * @example
 * futures.describeServerError = (e) => recordFailure(`${dataDir}/backend.log`, e);
 */
export function recordFailure(logPath: string, err: unknown, what = "request"): string {
  const stack = err instanceof Error ? (err.stack ?? err.message) : String(err);
  try {
    Deno.writeTextFileSync(logPath, `${new Date().toISOString()} ${what} failed: ${stack}\n`, {
      append: true,
    });
  } catch {
    // A log that cannot be written must not hide the failure itself.
  }
  const message = err instanceof Error ? err.message : String(err);
  if (isOutOfMemory(err)) {
    const used = (heapBytes() / 2 ** 30).toFixed(1);
    const limit = HEAP_LIMIT_BYTES / 2 ** 30;
    return `out of memory: the local backend's device heap is full (${used} of ${limit} GiB); ` +
      `lower the episodes sampled at once (rollout.max_concurrency, --max-concurrency) or the ` +
      `prefix cache (--prefix-cache-mb) (details in ${logPath})`;
  }
  return `the local backend failed: ${firstLine(message)} (details in ${logPath})`;
}

function firstLine(s: string): string {
  return s.split("\n", 1)[0];
}
