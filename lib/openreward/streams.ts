/**
 * The event-stream responses of an ORS server: `create_session`'s finished stream of events, and
 * a `call`'s stream (`task_id`, `: ping` comments while the tool runs, then the result's chunks
 * or the error), which a client may drop and reattach to by `task_id`.
 *
 * @module
 */

import { concatBytes } from "../http/mod.ts";
import type { CallTask } from "./sessions.ts";
import { chunkResult, sseEvent, ssePing } from "./sse.ts";

const SSE_HEADERS = {
  "Content-Type": "text/event-stream",
  "Cache-Control": "no-cache",
  "Connection": "keep-alive",
  "X-Accel-Buffering": "no",
};

/** A finished event stream of the given events. */
export function sseEventsResponse(...events: Uint8Array[]): Response {
  return new Response(concatBytes(events), { headers: SSE_HEADERS });
}

/**
 * The response of a `call`: the call's stream, pinging every `pingMs`; with `drop` it ends after
 * `task_id` (fault injection: the client must reattach).
 */
export function callResponse(task: CallTask | undefined, pingMs: number, drop: boolean): Response {
  return new Response(callStream(task, pingMs, drop), { headers: SSE_HEADERS });
}

/** The SSE stream of a call: `task_id`, pings while it runs, then its chunks or its error. */
function callStream(task: CallTask | undefined, pingMs: number, drop: boolean): ReadableStream {
  let timer: ReturnType<typeof setInterval> | undefined;
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (bytes: Uint8Array) => {
        try {
          controller.enqueue(bytes);
        } catch { /* the client went away; the task goes on for a reattach */ }
      };
      if (!task) {
        send(sseEvent("error", "unknown task_id"));
        return controller.close();
      }
      send(sseEvent("task_id", task.id));
      if (drop) return controller.close(); // ends without `end`: the client must reattach
      timer = setInterval(() => send(ssePing()), pingMs);
      await task.done;
      clearInterval(timer);
      if (task.error !== undefined) send(sseEvent("error", task.error.replace(/[\r\n]+/g, " ")));
      else {
        const chunks = chunkResult(task.result!);
        chunks.forEach((d, i) => send(sseEvent(i === chunks.length - 1 ? "end" : "chunk", d)));
      }
      try {
        controller.close();
      } catch { /* already cancelled */ }
    },
    cancel() {
      clearInterval(timer);
    },
  });
}
