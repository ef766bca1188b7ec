/**
 * How a run stands (`status.json`, rewritten whole as the run goes: at its start, after each
 * step, at its end) and what its steps raised (`events.jsonl`, one notice a line).
 *
 * @module
 */

import { z } from "zod";
import { appendJsonLines, writeJsonAtomic } from "./atomic.ts";
import { runPath } from "./files.ts";
import { readJsonFile, readJsonl } from "./jsonl.ts";
import { formatZodError } from "../util/zod.ts";

/** How a run stands (`status.json`). */
export const RunDirStatusSchema: z.ZodObject<
  {
    state: z.ZodEnum<
      { failed: "failed"; completed: "completed"; interrupted: "interrupted"; running: "running" }
    >;
    step: z.ZodNumber;
    error: z.ZodOptional<z.ZodString>;
    time: z.ZodString;
  },
  z.core.$strip
> = z.object({
  state: z.enum(["running", "completed", "interrupted", "failed"]),
  /** Steps completed. */
  step: z.number().int().min(0),
  /** The one-line reason of a failed run. */
  error: z.string().optional(),
  time: z.string(),
});

/** How a run stands. */
export type RunDirStatus = z.infer<typeof RunDirStatusSchema>;

/** Writes how the run stands (`status.json`, write-then-rename), stamped with the time. */
export async function writeRunStatus(
  dir: string,
  status: Omit<RunDirStatus, "time">,
): Promise<void> {
  const rec = RunDirStatusSchema.parse({ ...status, time: new Date().toISOString() });
  await writeJsonAtomic(runPath(dir, "status"), rec);
}

/** How a run directory's run stands (`status.json`), or null when it has no (valid) status. */
export async function readRunStatus(dir: string): Promise<RunDirStatus | null> {
  const raw = await readJsonFile(runPath(dir, "status")).catch(() => null);
  const parsed = RunDirStatusSchema.safeParse(raw);
  return parsed.success ? parsed.data : null;
}

/** A notice a step raised (`events.jsonl`). */
export const RunEventSchema: z.ZodObject<
  { step: z.ZodNumber; event: z.ZodString; detail: z.ZodString },
  z.core.$strip
> = z.object({
  step: z.number().int().min(0),
  /** What happened, e.g. `nothing_trained`, `evaluation_skipped`, `stale_lock`. */
  event: z.string(),
  /** The one-line reason. */
  detail: z.string(),
});

/** A notice a step raised. */
export type RunEvent = z.infer<typeof RunEventSchema>;

/** Records a step's notice in `events.jsonl`. */
export async function appendRunEvent(dir: string, event: RunEvent): Promise<void> {
  await appendJsonLines(runPath(dir, "events"), [RunEventSchema.parse(event)]);
}

/**
 * A run's notices, oldest first. A line that is not a notice is reported to `skipped` and left
 * out when it is given, else an error.
 */
export function readRunEvents(dir: string, skipped?: string[]): Promise<RunEvent[]> {
  return readJsonl(runPath(dir, "events"), {
    skipped,
    check: (r) => {
      const parsed = RunEventSchema.safeParse(r);
      return parsed.success
        ? { ok: true, row: parsed.data }
        : { ok: false, why: `not an event (${formatZodError(parsed.error)})` };
    },
  });
}
