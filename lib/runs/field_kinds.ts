/**
 * The kinds of value a runs-API config field holds, each with its zod schema and its allowed
 * values in words: integers and numbers in a range (also given as numeric text, as agents often
 * quote them), choices, booleans, model names and run names.
 *
 * @module
 */

import { z } from "zod";
import { localModelNames } from "../local/models.ts";
import { getRenderer } from "../renderers/mod.ts";

/** The value kinds a field can hold, as reported to agents. */
export type FieldType = "integer" | "number" | "boolean" | "string" | "enum";

/** A value of a field (JSON). */
export type FieldValue = string | number | boolean | null;

const isNumberText = (s: string) => s.trim() !== "" && Number.isFinite(Number(s));

/** Numbers may come as JSON numbers or numeric strings: agents often quote them. */
function numeric(inner: z.ZodNumber, nullable: boolean): z.ZodType<FieldValue> {
  const fromText = z.string().refine(isNumberText, "not a number").transform(Number).pipe(inner);
  const base = z.union([inner, fromText]);
  return (nullable
    ? z.union([z.null(), z.literal("null").transform(() => null), base])
    : base) as z.ZodType<FieldValue>;
}

/** An integer in [min, max]. */
export function int(min: number, max: number) {
  return {
    type: "integer" as const,
    allowed: `an integer from ${min} to ${max}`,
    schema: numeric(z.number().int().min(min).max(max), false),
  };
}

/** A number in [min, max] (above min with `exclusiveMin`), optionally null. */
export function num(min: number, max: number, { nullable = false, exclusiveMin = false } = {}) {
  const inner = exclusiveMin ? z.number().gt(min).max(max) : z.number().min(min).max(max);
  const range = exclusiveMin ? `above ${min} and at most ${max}` : `from ${min} to ${max}`;
  return {
    type: "number" as const,
    allowed: `a number ${range}${nullable ? ", or null" : ""}`,
    schema: numeric(inner, nullable),
  };
}

/** One of a few words. */
export function choice(values: readonly [string, ...string[]]) {
  return {
    type: "enum" as const,
    allowed: `one of ${values.join(", ")}`,
    schema: z.enum(values) as z.ZodType<FieldValue>,
  };
}

/** true or false (also as text). */
export function bool() {
  const text = z.enum(["true", "false"]).transform((s) => s === "true");
  return {
    type: "boolean" as const,
    allowed: "true or false",
    schema: z.union([z.boolean(), text]) as z.ZodType<FieldValue>,
  };
}

/** A model this machine can train: a local model, or a Qwen3 model on the Tinker cloud. */
export function checkModelName(name: string): string | null {
  if (name.startsWith("local/")) {
    return localModelNames().includes(name) ? null : "no such local model";
  }
  try {
    getRenderer(name);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

/** A model name: a local model, or `Qwen/Qwen3-*` on the Tinker cloud. */
export const modelName = {
  type: "string" as const,
  allowed: `a local model (${localModelNames().join(", ")}) or Qwen/Qwen3-* with TINKER_API_KEY`,
  schema: z.string().min(1).superRefine((s, ctx) => {
    const problem = checkModelName(s);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }) as z.ZodType<FieldValue>,
};

/** A run name: 1 to 100 letters, digits and `. _ : -`. */
export const runName = {
  type: "string" as const,
  allowed: "1 to 100 characters: letters, digits, and . _ : -",
  schema: z.string().regex(/^[A-Za-z0-9._:-]{1,100}$/) as z.ZodType<FieldValue>,
};
