/**
 * Tool environments: the Open Reward Standard's shape of an environment, in TypeScript. A tool
 * environment serves tasks by split; a session of one task gives a prompt (blocks) and a set of
 * tools; every action is a tool call, answered with a {@link ToolOutput} (blocks, an optional
 * reward, `finished`). The same definition runs in process (through {@link ToolTaskEnv}, a
 * message environment) and behind `deno task envs serve` (the ORS server in lib/openreward), and
 * an ORS server's environments are played through the same {@link TaskSession} interface.
 *
 * ```text
 * ToolEnvironment ──open(task)──> TaskSession ──prompt / tools / call──> blocks, ToolOutput
 *   (server side, or in process)      ▲ also an ORS client session over HTTP
 * ```
 *
 * @module
 */

import { z } from "zod";
import type { Awaitable } from "../rl/types.ts";
import type { ToolSpec } from "../renderers/types.ts";
import { deriveSeed } from "../util/random.ts";

/** A text block of a prompt or a tool output (`detail` is ORS's free-form extra, often null). */
export interface TextBlock {
  /** Always `text`. */
  type: "text";
  /** The text. */
  text: string;
  /** ORS's free-form extra (often null). */
  detail: Record<string, unknown> | null;
}

/** An image block (base64 data). */
export interface ImageBlock {
  /** Always `image`. */
  type: "image";
  /** The image's bytes, base64. */
  data: string;
  /** Its MIME type, e.g. `image/png`. */
  mimeType: string;
  /** ORS's free-form extra (often null). */
  detail: Record<string, unknown> | null;
}

/** What prompts and tool outputs are made of. */
export type Block = TextBlock | ImageBlock;

/** What a tool call returns: ORS's `ToolOutput`, every key always present. */
export interface ToolOutput {
  /** What the call shows the agent. */
  blocks: Block[];
  /** Free-form data about the call (null when none). */
  metadata: Record<string, unknown> | null;
  /** The reward of this call; null when the call gives none (e.g. a look-up). */
  reward: number | null;
  /** The episode is over (the client stops; the server does not enforce it). */
  finished: boolean;
}

/**
 * The result of a call: the output, or a tool-level failure (an unknown tool, input that does
 * not validate) that the agent should see. Exceptions inside a tool are thrown instead.
 */
export type RunToolOutput = { ok: true; output: ToolOutput } | { ok: false; error: string };

/** A split of an environment's tasks. */
export interface TaskSplit {
  /** The split's name (`train`, `test`, …). */
  name: string;
  /** What the split is for. */
  type: "train" | "validation" | "test";
}

/** A task: a JSON object the environment builds an episode from. */
export type TaskSpec = Record<string, unknown>;

/** One session of one task: the episode's prompt, tools and calls. */
export interface TaskSession {
  /** The task's prompt. */
  prompt(): Awaitable<Block[]>;
  /** The tools of this task (the environment's shared tools and any task-specific ones). */
  tools(): Awaitable<readonly ToolSpec[]>;
  /** Calls a tool; tool-level failures come back as `{ ok: false }`, other failures throw. */
  call(name: string, input: unknown): Awaitable<RunToolOutput>;
  /** Ends the session (tears the episode down). */
  close?(): Awaitable<void>;
}

/**
 * A tool environment: tasks by split, and a session per task (the server's
 * `Environment(task_spec, secrets)` + `setup()`).
 *
 * @example
 * const env: ToolEnvironment = {
 *   name: "echo", description: "Say the word.", splits: [{ name: "train", type: "train" }],
 *   tools: [ECHO.spec], numTasks: () => 3, getTask: (_s, i) => ({ word: `w${i}` }),
 *   open: (task) => toolSession([{ type: "text", text: `Say ${task.word}.`, detail: null }],
 *     [ECHO.bind(task)]),
 * };
 */
export interface ToolEnvironment {
  /** ORS name: lower-case, URL-safe (routes are `/{name}/...`). */
  readonly name: string;
  /** One line for listings (`GET /environments`). */
  readonly description: string;
  /** The splits of its tasks (`GET /{env}/splits`). */
  readonly splits: readonly TaskSplit[];
  /** The tools every task has (`GET /{env}/tools`). */
  readonly tools: readonly ToolSpec[];
  /** A turn limit that suits the environment's episodes (tool calls per episode). */
  readonly maxTurns?: number;
  /** How many tasks a split has. */
  numTasks(split: string): Awaitable<number>;
  /** The task at an index; a `RangeError` for an index out of range. */
  getTask(split: string, index: number): Awaitable<TaskSpec>;
  /** Every task of a split; absent for index-based datasets (use numTasks + getTask). */
  listTasks?(split: string): Awaitable<TaskSpec[]>;
  /** A new session of a task. */
  open(task: TaskSpec, secrets: Record<string, string>): Awaitable<TaskSession>;
}

/** A tool with its input schema and what it does, before it is bound to an episode's state. */
export interface ToolDef<T> {
  /** The tool as the model sees it. */
  readonly spec: ToolSpec;
  /** The tool bound to one episode's state `T`. */
  bind(state: T): BoundTool;
}

/** A tool ready to run inside one session. */
export interface BoundTool {
  /** The tool as the model sees it. */
  readonly spec: ToolSpec;
  /** Runs the tool on a call's input (validated inside). */
  run(input: unknown): Promise<RunToolOutput>;
}

/**
 * Defines a tool: a name, a description, a zod schema of its input object (turned into the
 * JSON Schema the agent sees), and a handler over an episode's state. Input that does not
 * validate comes back as `Tool input validation error: …` (as ORS's reference server words it).
 *
 * @example
 * const GUESS = defineTool("guess", "Guess the number.", z.object({ number: z.number().int() }),
 *   (game: GuessTheNumber, { number }) => textOutput(game.step(`\\boxed{${number}}`).observation));
 */
export function defineTool<S extends z.ZodObject, T>(
  name: string,
  description: string,
  input: S,
  run: (state: T, args: z.infer<S>) => Awaitable<ToolOutput>,
): ToolDef<T> {
  // Strict, as the declared schema says (`additionalProperties: false`): a misspelt argument
  // is an error the agent sees, not silently dropped.
  const strict = input.strict();
  const spec: ToolSpec = { name, description, parameters: jsonSchemaOf(strict) };
  return {
    spec,
    bind: (state) => ({
      spec,
      async run(raw) {
        const parsed = strict.safeParse(raw ?? {});
        if (!parsed.success) {
          const issues = parsed.error.issues.map((i) =>
            `${i.path.length ? i.path.join(".") + ": " : ""}${i.message}`
          );
          return { ok: false, error: `Tool input validation error: ${issues.join("; ")}` };
        }
        return { ok: true, output: await run(state, parsed.data as z.infer<S>) };
      },
    }),
  };
}

/**
 * A session over bound tools: unknown tools are `'x' is not a valid tool` (ORS's wording).
 *
 * @example
 * return toolSession(prompt, [GUESS.bind(game)]);
 */
export function toolSession(
  prompt: Block[],
  tools: readonly BoundTool[],
  close?: () => Awaitable<void>,
): TaskSession {
  const byName = new Map(tools.map((t) => [t.spec.name, t]));
  return {
    prompt: () => prompt,
    tools: () => tools.map((t) => t.spec),
    call: (name, input) =>
      byName.get(name)?.run(input) ??
        Promise.resolve({ ok: false, error: `'${name}' is not a valid tool` }),
    ...(close ? { close } : {}),
  };
}

/** A text block. */
export function textBlock(text: string): TextBlock {
  return { type: "text", text, detail: null };
}

/** A tool output of one text block. */
export function textOutput(
  text: string,
  opts: { reward?: number | null; finished?: boolean; metadata?: Record<string, unknown> } = {},
): ToolOutput {
  return {
    blocks: [textBlock(text)],
    metadata: opts.metadata ?? null,
    reward: opts.reward ?? null,
    finished: opts.finished ?? false,
  };
}

/**
 * The text an agent reads from blocks: text blocks joined (as OpenReward's trainer does), an
 * image as a placeholder naming its type.
 */
export function blocksText(blocks: readonly Block[]): string {
  return blocks.map((b) => (b.type === "text" ? b.text : `[image ${b.mimeType}]`)).join("");
}

const SAFE = Number.MAX_SAFE_INTEGER;

/**
 * The JSON Schema of a zod input schema as agents see it: without `$schema`, and without the
 * ±2^53 bounds zod adds to every integer (noise in a prompt).
 */
export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (v === null || typeof v !== "object") return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (k === "$schema") continue;
      if ((k === "minimum" && x === -SAFE) || (k === "maximum" && x === SAFE)) continue;
      out[k] = strip(x);
    }
    return out;
  };
  return strip(z.toJSONSchema(schema)) as Record<string, unknown>;
}

/** The standard split type of a name (`train`, `validation`, `test`; others are validation). */
export function splitOf(name: string): TaskSplit {
  const type = name === "train" || name === "test" || name === "validation" ? name : "validation";
  return { name, type };
}

/** The task parts of a generated environment: splits, counts and seeded task specs. */
export type SeededTasks = Pick<ToolEnvironment, "splits" | "numTasks" | "getTask">;

/**
 * Tasks of an environment that generates each episode from a seed: task i of `train` has seed
 * i; other splits derive their seeds from the index with `salt`, so they hold other episodes.
 * A task spec is `{ split, index, seed }` plus what `extra` adds (e.g. the question).
 *
 * @example
 * const tasks = seededTasks({ train: 100_000, test: 1_000 }, 0x65a8);
 * tasks.getTask("test", 3); // { split: "test", index: 3, seed: 1740310925 }
 */
export function seededTasks(
  counts: Readonly<Record<string, number>>,
  salt: number,
  extra: (seed: number) => TaskSpec = () => ({}),
): SeededTasks {
  const count = (split: string) => (Object.hasOwn(counts, split) ? counts[split] : 0);
  return {
    splits: Object.keys(counts).map(splitOf),
    numTasks: count,
    getTask: (split, index) => {
      const n = count(split);
      if (!Number.isInteger(index) || index < 0 || index >= n) {
        throw new RangeError(`task index ${index} out of range [0, ${n})`);
      }
      const seed = split === "train" ? index : deriveSeed(salt, index);
      return { split, index, seed, ...extra(seed) };
    },
  };
}
