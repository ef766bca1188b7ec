/**
 * The run directory's `eval.json`: the held-out comparison of the base model and the trained
 * policy (the trainer's evaluator in `lib/trainer/evaluate.ts` makes it), its reader and writer,
 * and the one line `deno task train` ends with.
 *
 * @module
 */

import { z } from "zod";
import { formatZodError } from "../util/zod.ts";
import { writeJsonAtomic } from "./atomic.ts";
import { runPath } from "./files.ts";
import { readJsonFile } from "./jsonl.ts";

/** One policy's score on the held-out episodes. */
export const PolicyScoreSchema: z.ZodObject<
  {
    success: z.ZodNumber;
    mean_reward: z.ZodNumber;
    episodes: z.ZodNumber;
    first_error: z.ZodOptional<z.ZodString>;
  },
  z.core.$strip
> = z.object({
  /** Solved episodes (rewards sum to ≥ 1) over episodes played. */
  success: z.number().min(0).max(1),
  mean_reward: z.number(),
  /** Episodes that played to the end (failed ones, e.g. context overflows, are left out). */
  episodes: z.number().int().min(0),
  /** Why the first left-out episode failed, when one did. */
  first_error: z.string().optional(),
});

/** A policy's score on the held-out episodes. */
export type PolicyScore = z.infer<typeof PolicyScoreSchema>;

/** The run directory's `eval.json`. */
export const HeldOutEvaluationSchema: z.ZodObject<
  {
    env_id: z.ZodString;
    model: z.ZodString;
    episodes: z.ZodNumber;
    env_seeds: z.ZodTuple<[z.ZodNumber, z.ZodNumber], null>;
    sampler_seed: z.ZodNumber;
    temperature: z.ZodNumber;
    step: z.ZodNumber;
    base: typeof PolicyScoreSchema;
    trained: typeof PolicyScoreSchema;
    split: z.ZodOptional<
      z.ZodObject<{ name: z.ZodString; trained_on: z.ZodBoolean }, z.core.$strip>
    >;
    environments: z.ZodOptional<
      z.ZodRecord<
        z.ZodString,
        z.ZodUnion<
          readonly [
            z.ZodObject<
              {
                base: typeof PolicyScoreSchema;
                trained: typeof PolicyScoreSchema;
                split: z.ZodOptional<z.ZodString>;
              },
              z.core.$strip
            >,
            z.ZodObject<{ skipped: z.ZodString }, z.core.$strip>,
          ]
        >
      >
    >;
    seconds: z.ZodNumber;
  },
  z.core.$strip
> = z.object({
  env_id: z.string(),
  model: z.string(),
  /** Held-out episodes asked for (one per env seed). */
  episodes: z.number().int().min(1),
  /** The env seeds, first and last. */
  env_seeds: z.tuple([z.number().int(), z.number().int()]),
  sampler_seed: z.number().int(),
  temperature: z.number(),
  /** Steps of training behind the trained policy. */
  step: z.number().int().min(0),
  base: PolicyScoreSchema,
  trained: PolicyScoreSchema,
  /**
   * A task list's split the episodes played: one the run does not train on, else (`trained_on`)
   * the only split it has.
   */
  split: z.object({ name: z.string(), trained_on: z.boolean() }).optional(),
  /**
   * An environment mix's scores per environment (`base` and `trained` above are over all of
   * them), and the environments left out with the reason.
   */
  environments: z.record(
    z.string(),
    z.union([
      z.object({
        base: PolicyScoreSchema,
        trained: PolicyScoreSchema,
        /** A task list's: the split played, one the run did not train on. */
        split: z.string().optional(),
      }),
      z.object({ skipped: z.string() }),
    ]),
  ).optional(),
  seconds: z.number(),
});

/** A held-out comparison of the base model and the trained policy. */
export type HeldOutEvaluation = z.infer<typeof HeldOutEvaluationSchema>;

/**
 * The one-line summary `deno task train` ends with.
 *
 * @example
 * heldOutLine(evaluation); // "held-out success: base 0.41 → trained 0.78 (64 episodes)"
 */
export function heldOutLine(e: HeldOutEvaluation): string {
  const line = (base: PolicyScore, trained: PolicyScore) =>
    `base ${base.success.toFixed(2)} → trained ${trained.success.toFixed(2)}`;
  const split = !e.split
    ? ""
    : e.split.trained_on
    ? `, ${e.split.name} split: its only one, trained on`
    : `, ${e.split.name} split`;
  const overall = `held-out success: ${line(e.base, e.trained)} (${e.episodes} episodes${
    e.environments ? " per environment" : ""
  }${split})`;
  if (!e.environments) return overall;
  const parts = Object.entries(e.environments).map(([name, x]) =>
    "skipped" in x
      ? `${name}: skipped (${x.skipped})`
      : `${name}${x.split ? ` (${x.split} split)` : ""}: ${line(x.base, x.trained)}`
  );
  // Every environment skipped: no number to print over all.
  if (e.base.episodes === 0) return `held-out success: none; ${parts.join("; ")}`;
  return `${overall}; ${parts.join("; ")}`;
}

/** Writes `eval.json` into the run directory (write-then-rename: never half written). */
export async function writeEvaluation(dir: string, e: HeldOutEvaluation): Promise<void> {
  await writeJsonAtomic(runPath(dir, "evaluation"), HeldOutEvaluationSchema.parse(e));
}

/**
 * The run directory's `eval.json`, or null when the run has none; a file that is not an
 * evaluation is an error naming it (`eval.json: …`).
 */
export async function readEvaluation(dir: string): Promise<HeldOutEvaluation | null> {
  const json = await readJsonFile(runPath(dir, "evaluation"));
  if (json === null) return null;
  const parsed = HeldOutEvaluationSchema.safeParse(json);
  if (!parsed.success) throw new Error(formatZodError(parsed.error, "eval.json"));
  return parsed.data;
}
