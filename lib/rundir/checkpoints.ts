/**
 * The run directory's `checkpoints.jsonl`: one record per saved state, oldest first; the last
 * one is where a rerun resumes.
 *
 * @module
 */

import { z } from "zod";
import { formatZodError } from "../util/zod.ts";
import { appendJsonLines } from "./atomic.ts";
import { runPath } from "./files.ts";
import { readJsonl } from "./jsonl.ts";

/** One saved state in `checkpoints.jsonl`. */
export const CheckpointRecordSchema: z.ZodObject<
  {
    name: z.ZodString;
    step: z.ZodNumber;
    state_path: z.ZodString;
    sampler_path: z.ZodOptional<z.ZodString>;
    kind: z.ZodEnum<{ periodic: "periodic"; final: "final"; interrupted: "interrupted" }>;
    time: z.ZodString;
  },
  z.core.$strip
> = z.object({
  name: z.string(),
  /** Steps completed when the state was saved; a resumed run continues at step + 1. */
  step: z.number().int().min(0),
  /** `tinker://…/weights/…`: weights and optimizer state. */
  state_path: z.string(),
  /** `tinker://…/sampler_weights/…`, for the final checkpoint. */
  sampler_path: z.string().optional(),
  kind: z.enum(["periodic", "final", "interrupted"]),
  time: z.string(),
});

/** A checkpoint record. */
export type CheckpointRecord = z.infer<typeof CheckpointRecordSchema>;

/**
 * A run's checkpoint records, oldest first (none when it has none). A line that is not a record
 * is reported to `skipped` and left out when it is given, else an error.
 */
export function readCheckpoints(dir: string, skipped?: string[]): Promise<CheckpointRecord[]> {
  return readJsonl(runPath(dir, "checkpoints"), {
    skipped,
    check: (r) => {
      const parsed = CheckpointRecordSchema.safeParse(r);
      return parsed.success
        ? { ok: true, row: parsed.data }
        : { ok: false, why: `not a checkpoint record (${formatZodError(parsed.error)})` };
    },
  });
}

/** Appends a checkpoint record (checked against the schema) as one whole line. */
export async function appendCheckpoint(dir: string, rec: CheckpointRecord): Promise<void> {
  await appendJsonLines(runPath(dir, "checkpoints"), [CheckpointRecordSchema.parse(rec)]);
}
