/**
 * The kinds of value a runs-API config field holds, each with its zod schema and its allowed
 * values in words. A field that is a training setting takes its kind from the setting's own
 * schema ({@link settingKind}); the runs server's own fields are a boolean and a run name.
 * Values may come as text (agents often quote numbers): they are read as the setting's type the
 * way a `--flag` is.
 *
 * @module
 */

import { z } from "zod";
import { readSetting, resolveName, settingSchema } from "../config/mod.ts";
import { localModelNames } from "../local/models.ts";
import { getRenderer } from "../renderers/mod.ts";

/** The value kinds a field can hold, as reported to agents. */
export type FieldType = "integer" | "number" | "boolean" | "string" | "enum";

/** A value of a field (JSON). */
export type FieldValue = string | number | boolean | null;

/** A field's kind: what it reports and how a new value is checked. */
export interface FieldKind {
  type: FieldType;
  /** What values are allowed, in words (shown in errors and in `GET /config`). */
  allowed: string;
  /** Validates (and, for values given as text, converts) a new value. */
  schema: z.ZodType<FieldValue>;
}

/**
 * The kind of the training setting at `path`: its type, range and choices as the config schema
 * has them, checked by that schema after reading text as the setting's type.
 *
 * @example
 * settingKind("rollout.group_size").allowed; // "an integer >= 1"
 */
export function settingKind(path: string): FieldKind {
  const { node } = resolveName(path);
  if (node.kind !== "leaf") throw new Error(`${path} is not a single setting`);
  const inner = settingSchema(path);
  const type = node.type.replace(/ \| null$/, "");
  const base = node.choices
    ? `one of ${node.choices.join(", ")}`
    : node.read === "integer"
    ? `an ${type}`
    : node.read === "number"
    ? `a ${type}`
    : node.read === "boolean"
    ? "true or false"
    : "a string";
  return {
    type: node.choices ? "enum" : node.read,
    allowed: node.nullable ? `${base}, or null` : base,
    schema: z.unknown().transform((v) => readSetting(v, node, path, path)).pipe(
      inner,
    ) as z.ZodType<FieldValue>,
  };
}

/** true or false (also as text). */
export function bool(): FieldKind {
  const text = z.enum(["true", "false"]).transform((s) => s === "true");
  return {
    type: "boolean",
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

/**
 * A model-name setting narrowed to the models this machine can train (the trainer would only
 * find out when it starts).
 */
export function trainableModel(kind: FieldKind): FieldKind {
  return {
    type: kind.type,
    allowed: `a local model (${localModelNames().join(", ")}) or Qwen/Qwen3-* with TINKER_API_KEY`,
    schema: kind.schema.superRefine((s, ctx) => {
      const problem = typeof s === "string" ? checkModelName(s) : null;
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    }),
  };
}

/** A run name: 1 to 100 letters, digits and `. _ : -`. */
export const runName: FieldKind = {
  type: "string",
  allowed: "1 to 100 characters: letters, digits, and . _ : -",
  schema: z.string().regex(/^[A-Za-z0-9._:-]{1,100}$/) as z.ZodType<FieldValue>,
};
