/**
 * Unseen tools: a message environment whose every episode declares tools made up for it (random
 * names, descriptions and argument schemas) and asks, in the user message, for one or a few
 * calls with the argument values written out. Its transcripts teach `local/tools` the tool-call
 * format itself (copy a declared name, fill the declared arguments with the values the user
 * gave) rather than any one environment's tools, so a user's own tool (`examples/my_env.ts`'s
 * `say`) is called without having been in the training data.
 *
 * A call earns 1 when its name and arguments are exactly the asked ones, else 0; the episode
 * ends after the asked calls (or one turn per asked call).
 *
 * @module
 */

import type { Message, ToolCall, ToolSpec } from "../renderers/types.ts";
import type { MessageEnv, MessageStepResult } from "../envs/types.ts";
import { Rng } from "../util/random.ts";

/** Registry-style id of the unseen-tools environment (pretraining and evaluation only). */
export const UNSEEN_TOOLS_ID = "synthetic:UnseenTools-v0";

/** The unseen tools' verbs (tool names). */
export const VERBS: readonly string[] = [
  "say",
  "send",
  "echo",
  "store",
  "fetch",
  "lookup",
  "add",
  "set",
  "get",
  "find",
  "open",
  "play",
  "write",
  "book",
  "search",
  "translate",
  "count",
  "print",
  "check",
  "mark",
  "move",
  "buy",
  "call",
  "note",
];
/** The unseen tools' nouns (argument names). */
export const NOUNS: readonly string[] = [
  "word",
  "item",
  "city",
  "note",
  "file",
  "user",
  "song",
  "color",
  "name",
  "room",
  "task",
  "message",
  "number",
  "score",
  "record",
  "ticket",
  "order",
  "weather",
  "label",
  "value",
  "page",
  "key",
  "date",
  "animal",
];
/** The words argument values are drawn from. */
export const VALUE_WORDS: readonly string[] = [
  "hi",
  "hello",
  "yes",
  "no",
  "blue",
  "red",
  "green",
  "apple",
  "river",
  "stone",
  "paris",
  "tokyo",
  "lima",
  "cat",
  "dog",
  "owl",
  "moon",
  "sun",
  "tea",
  "jazz",
  "alpha",
  "delta",
  "north",
  "south",
  "maple",
  "ocean",
  "pixel",
  "rocket",
  "zebra",
  "piano",
  "ok",
  "bye",
];

interface Arg {
  name: string;
  type: "string" | "integer" | "boolean" | "enum";
  options?: string[];
}

/** Most calls one task asks for. */
export const MAX_ASKED = 3;

/** One generated task: its tools, the user's request and the calls that fulfil it. */
export interface UnseenToolTask {
  tools: ToolSpec[];
  prompt: string;
  calls: ToolCall[];
}

const pickOne = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(xs.length)];
const cap = (s: string) => s[0].toUpperCase() + s.slice(1);

/**
 * `min` to `max` random lowercase letters (the length drawn first): a made-up name the tokenizer
 * spells letter by letter.
 */
export function madeUpLetters(rng: Rng, min: number, max: number): string {
  const length = min + rng.int(max - min + 1);
  return Array.from({ length }, () => "abcdefghijklmnopqrstuvwxyz"[rng.int(26)]).join("");
}

/** A made-up identifier: a verb, a verb_noun, or (rarely) random letters. */
function identifier(rng: Rng, pool: readonly string[]): string {
  const u = rng.uniform();
  if (u < 0.1) return madeUpLetters(rng, 3, 7);
  if (u < 0.45) return pickOne(rng, pool);
  return `${pickOne(rng, VERBS)}_${pickOne(rng, NOUNS)}`;
}

function argValue(rng: Rng, a: Arg): unknown {
  switch (a.type) {
    case "integer":
      return rng.int(101);
    case "boolean":
      return rng.uniform() < 0.5;
    case "enum":
      return pickOne(rng, a.options!);
    default:
      return rng.uniform() < 0.1
        ? `${pickOne(rng, VALUE_WORDS)} ${pickOne(rng, VALUE_WORDS)}`
        : pickOne(rng, VALUE_WORDS);
  }
}

/** A tool's JSON Schema in one of the styles tools arrive in (hand-written, zod's, OpenAI's). */
function schemaOf(rng: Rng, args: Arg[]): Record<string, unknown> {
  const described = rng.uniform() < 0.5;
  const properties = Object.fromEntries(args.map((a) => {
    const type = a.type === "enum" ? "string" : a.type;
    return [a.name, {
      type,
      ...(a.options ? { enum: a.options } : {}),
      ...(described ? { description: `The ${a.name.replace(/_/g, " ")}` } : {}),
    }];
  }));
  return {
    type: "object",
    properties,
    required: args.map((a) => a.name),
    ...(rng.uniform() < 0.4 ? { additionalProperties: false } : {}),
  };
}

/** How the user asks for a call, given the tool and its values. */
function request(rng: Rng, tool: string, call: ToolCall, args: Arg[]): string {
  const values = call.arguments as Record<string, unknown>;
  const quoted = (v: unknown) => (typeof v === "string" ? `'${v}'` : JSON.stringify(v));
  if (args.length === 1 && rng.uniform() < 0.5) {
    const v = quoted(values[args[0].name]);
    const verb = cap(tool.split("_")[0]);
    return pickOne(rng, [
      `${verb} ${v} with the ${tool} tool.`,
      `Use the ${tool} tool with ${v}.`,
      `Call ${tool} on ${v}.`,
      `${verb} ${v} using ${tool}.`,
    ]);
  }
  const parts = args.map((a) => `${a.name} ${quoted(values[a.name])}`);
  const list = parts.length > 1 ? `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}` : parts[0];
  return pickOne(rng, [
    `Use the ${tool} tool with ${list}.`,
    `Call ${tool} with ${list}.`,
    `Please run ${tool}: ${list}.`,
  ]);
}

/**
 * The task of a seed: one to three tools of zero to three arguments each, and a request for one
 * call (two in a fifth of tasks, one after the other). Tool names are verbs or verb_noun pairs of
 * a small fixed set (or, rarely, random letters), argument names nouns or pairs.
 *
 * @example
 * const task = generateUnseenToolTask(3);
 * task.calls[0].name; // one of task.tools' names
 */
export function generateUnseenToolTask(seed: number): UnseenToolTask {
  const rng = new Rng(seed);
  return toolTask(
    rng,
    1 + rng.int(3),
    (kind) => identifier(rng, kind === "tool" ? VERBS : NOUNS),
    () => rng.uniform() < 0.2 ? 2 : 1,
  );
}

/**
 * A task of `n` tools named by `name` (called for each tool, then each tool's arguments, in
 * order), with a request for `asked()` calls (at most {@link MAX_ASKED}), one after the other.
 * Shared by the unseen tools and the fresh tools (`fresh_tools.ts`), which differ in how names
 * are made up and how many calls are asked.
 */
export function toolTask(
  rng: Rng,
  n: number,
  name: (kind: "tool" | "argument") => string,
  asked: () => number,
): UnseenToolTask {
  const names = new Set<string>();
  while (names.size < n) names.add(name("tool"));
  const defs = [...names].map((toolName) => {
    const argNames = new Set<string>();
    const k = rng.uniform() < 0.1 ? 0 : 1 + Math.floor(rng.uniform() * rng.uniform() * 3);
    while (argNames.size < k) argNames.add(name("argument"));
    const args: Arg[] = [...argNames].map((a) => {
      const u = rng.uniform();
      if (u < 0.6) return { name: a, type: "string" };
      if (u < 0.8) return { name: a, type: "integer" };
      if (u < 0.9) return { name: a, type: "boolean" };
      const options = new Set<string>();
      while (options.size < 2 + rng.int(3)) options.add(pickOne(rng, VALUE_WORDS));
      return { name: a, type: "enum", options: [...options] };
    });
    const spec: ToolSpec = {
      name: toolName,
      description: `${cap(toolName.replace(/_/g, " "))} ${
        pickOne(rng, ["now", "for the user", "once", "(returns a status)"])
      }.`,
      parameters: schemaOf(rng, args),
    };
    return { spec, args };
  });
  const count = Math.min(MAX_ASKED, asked());
  const calls: ToolCall[] = [];
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    const d = pickOne(rng, defs);
    const call = {
      name: d.spec.name,
      arguments: Object.fromEntries(d.args.map((a) => [a.name, argValue(rng, a)])),
    };
    calls.push(call);
    lines.push(
      d.args.length === 0
        ? `Call the ${d.spec.name} tool.`
        : request(rng, d.spec.name, call, d.args),
    );
  }
  const prompt = count === 1
    ? lines[0]
    : [`First: ${lines[0]}`, ...lines.slice(1).map((l) => `Then: ${l}`)].join(" ");
  return { tools: defs.map((d) => d.spec), prompt, calls };
}

/**
 * Whether a call names the asked tool with exactly the asked argument names, whatever their
 * values: the copy issue 43 measures (`deno task bench unseen_tools`).
 */
export function sameNameAndArgumentNames(got: ToolCall | undefined, want: ToolCall): boolean {
  if (!got || got.name !== want.name) return false;
  const a = got.arguments as Record<string, unknown> | null;
  if (a === null || typeof a !== "object" || Array.isArray(a)) return false;
  const keys = Object.keys(want.arguments as Record<string, unknown>);
  return Object.keys(a).length === keys.length && keys.every((k) => Object.hasOwn(a, k));
}

/** Whether a call is exactly the asked one (same name, same argument values). */
export function sameCall(got: ToolCall | undefined, want: ToolCall): boolean {
  if (!sameNameAndArgumentNames(got, want)) return false;
  const a = got!.arguments as Record<string, unknown>;
  const b = want.arguments as Record<string, unknown>;
  return Object.keys(b).every((k) => a[k] === b[k]);
}

/** The unseen-tools environment: one generated task per seed. */
export class UnseenToolsEnv implements MessageEnv {
  readonly kind = "message";
  // One turn per asked call: an episode ends after its last asked call, right or not.
  readonly maxTurns = MAX_ASKED;
  #task: UnseenToolTask | null = null;
  #done = 0;

  /**
   * `id` and `generate` name the task family: the unseen tools by default, or the fresh tools
   * (`fresh_tools.ts`), whose names are made up anew for every task.
   */
  constructor(
    readonly id: string = UNSEEN_TOOLS_ID,
    readonly generate: (seed: number) => UnseenToolTask = generateUnseenToolTask,
  ) {}

  get tools(): readonly ToolSpec[] {
    return this.#task?.tools ?? [];
  }

  /** The current task (for its format player). */
  get task(): UnseenToolTask | null {
    return this.#task;
  }

  reset(seed = 0): { messages: Message[]; info: Record<string, unknown> } {
    this.#task = this.generate(seed);
    this.#done = 0;
    return { messages: [{ role: "user", content: this.#task.prompt }], info: {} };
  }

  step(action: Message): MessageStepResult {
    const task = this.#task;
    if (!task) throw new Error(`${this.id}: call reset() before step()`);
    const want = task.calls[this.#done++];
    const got = action.toolCalls?.[0];
    const ok = sameCall(got, want);
    const over = this.#done >= task.calls.length;
    const reply = !got
      ? "No tool call detected."
      : task.tools.some((t) => t.name === got.name)
      ? (ok ? "Done." : "Done, but that is not what was asked.")
      : `'${got.name}' is not a valid tool`;
    return {
      messages: [got ? { role: "tool", content: reply } : { role: "user", content: reply }],
      reward: ok ? 1 / task.calls.length : 0,
      failedToolCalls: got && !task.tools.some((t) => t.name === got.name) ? 1 : 0,
      terminated: over,
      truncated: false,
      info: { reason: ok ? "asked_call" : got ? "other_call" : "no_tool_call" },
    };
  }

  spawn(sameState = false): UnseenToolsEnv {
    const copy = new UnseenToolsEnv(this.id, this.generate);
    if (sameState && this.#task) copy.#task = this.#task;
    return copy;
  }
}
