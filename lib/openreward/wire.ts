/**
 * The Open Reward Standard's wire shapes (from the reference SDK `openrewardstandard/python-sdk`,
 * `src/ors/types.py`), as zod schemas: request bodies the server validates and responses the
 * client validates. Python's models forbid extra keys; the schemas here are as strict where the
 * reference client would break on a difference (a tool spec has exactly three keys; blocks and
 * tool outputs carry every key).
 *
 * @module
 */

import { z } from "zod";
import type { ToolSpec } from "../renderers/types.ts";
import type { Block, RunToolOutput, TaskSplit, ToolOutput } from "../envs/tool_env.ts";

const Json = z.record(z.string(), z.unknown());

/** A text or image block; `detail` is always sent (null when empty). */
export const BlockSchema: z.ZodType<Block> = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: z.string(), detail: Json.nullable().default(null) }),
  z.object({
    type: z.literal("image"),
    data: z.string(),
    mimeType: z.string(),
    detail: Json.nullable().default(null),
  }),
]) as z.ZodType<Block>;

/** A tool's output. */
export const ToolOutputSchema: z.ZodType<ToolOutput> = z.object({
  blocks: z.array(BlockSchema),
  metadata: Json.nullable().default(null),
  reward: z.number().nullable().default(null),
  finished: z.boolean().default(false),
}) as z.ZodType<ToolOutput>;

/** What `/call` streams back. */
export const RunToolOutputSchema: z.ZodType<RunToolOutput> = z.union([
  z.object({ ok: z.literal(true), output: ToolOutputSchema }),
  z.object({ ok: z.literal(false), error: z.string() }),
]) as z.ZodType<RunToolOutput>;

/** A tool as ORS declares it: exactly these three keys. */
export const OrsToolSpecSchema = z.object({
  name: z.string(),
  description: z.string(),
  input_schema: Json.nullable(),
});

/** A tool as ORS declares it. */
export type OrsToolSpec = z.infer<typeof OrsToolSpecSchema>;

/** `GET /{env}/tools` and `/task_tools`. */
export const ToolListSchema = z.object({ tools: z.array(OrsToolSpecSchema) });

/** A split. */
export const SplitSchema: z.ZodType<TaskSplit> = z.object({
  name: z.string(),
  type: z.enum(["train", "validation", "test"]),
});

/** `POST /create`: a task spec, or a split and an index. */
export const CreateBodySchema = z.object({
  env_name: z.string().nullish(),
  task_spec: Json.nullish(),
  split: z.string().nullish(),
  index: z.number().int().nullish(),
  secrets: z.record(z.string(), z.string()).nullish(),
  toolset_name: z.string().nullish(),
}).strict().refine(
  (b) => (b.task_spec != null) !== (b.split != null && b.index != null),
  { message: "give either task_spec, or split and index" },
);

/** `POST /{env}/call`. */
export const CallBodySchema = z.object({
  name: z.string(),
  input: Json.default({}),
  task_id: z.string().nullish(),
}).strict();

/** `POST /{env}/tasks` and `/num_tasks`. */
export const SplitBodySchema = z.object({ split: z.string() }).strict();

/** `POST /{env}/task`. */
export const TaskBodySchema = z.object({ split: z.string(), index: z.number().int() }).strict();

/** `POST /{env}/task_range`: Python slice bounds (negative counts from the end). */
export const TaskRangeBodySchema = z.object({
  split: z.string(),
  start: z.number().int().nullish(),
  stop: z.number().int().nullish(),
}).strict();

/** One entry of `GET /environments` (this server's listing; `/list_environments` has names only). */
export const EnvironmentInfoSchema = z.object({
  name: z.string(),
  description: z.string(),
  splits: z.array(SplitSchema),
  tools: z.array(z.string()),
  registry_id: z.string().nullable(),
});

/** One entry of `GET /environments`. */
export type EnvironmentInfo = z.infer<typeof EnvironmentInfoSchema>;

/**
 * A project tool spec on the wire: `parameters` becomes `input_schema`. A tool without
 * arguments keeps its empty object schema (the reference server sends null there; both are
 * valid), so a prompt declares the same tools in process and over HTTP.
 */
export function toOrsToolSpec(t: ToolSpec): OrsToolSpec {
  return { name: t.name, description: t.description, input_schema: t.parameters };
}

/** An ORS tool spec as the project's (a null schema becomes an empty object schema). */
export function fromOrsToolSpec(t: OrsToolSpec): ToolSpec {
  return {
    name: t.name,
    description: t.description,
    parameters: t.input_schema ?? { type: "object", properties: {} },
  };
}

/**
 * Python's slice `xs[start:stop]` (negative bounds count from the end, out-of-range bounds are
 * clipped), which `/task_range` follows.
 */
export function pySlice(n: number, start?: number | null, stop?: number | null): [number, number] {
  const norm = (x: number | null | undefined, dflt: number) => {
    if (x === null || x === undefined) return dflt;
    return Math.min(n, Math.max(0, x < 0 ? n + x : x));
  };
  const a = norm(start, 0), b = norm(stop, n);
  return [a, Math.max(a, b)];
}
