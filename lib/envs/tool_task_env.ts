/**
 * A tool environment's tasks played as a message environment: reset opens a session of one task
 * (its prompt becomes the user message, its tools the declared tools), each assistant message's
 * tool calls go to the session, and their outputs come back as tool messages. The sessions come
 * from a {@link TaskProvider}: in process ({@link localTasks}) or an ORS server over HTTP
 * (lib/openreward), so the rollout, scoring and datums downstream are the same for both.
 *
 * @module
 */

import type { LocalModels } from "./local_models.ts";
import type { Message, ToolSpec } from "../renderers/types.ts";
import {
  blocksText,
  type RunToolOutput,
  type TaskSession,
  type TaskSplit,
  type ToolEnvironment,
} from "./tool_env.ts";
import type { MessageEnv, MessageStepResult } from "./types.ts";

/** A task by split and index. */
export interface TaskRef {
  /** The split's name. */
  split: string;
  /** The task's index in the split. */
  index: number;
}

/** Where sessions of an environment's tasks come from. */
export interface TaskProvider {
  /** The environment's name (its ORS name). */
  readonly name: string;
  /** A turn limit that suits the environment, when it says. */
  readonly maxTurns?: number;
  /** How many tasks a split has. */
  numTasks(split: string): Promise<number>;
  /** The splits and what each is for (`GET /{env}/splits`). */
  splits(): Promise<readonly TaskSplit[]>;
  /** A new session of a task. */
  open(task: TaskRef): Promise<TaskSession>;
}

/**
 * The tasks of a tool environment in process (no HTTP).
 *
 * @example
 * const env = new ToolTaskEnv(localTasks(WORD_PROBLEMS), { split: "test" });
 */
export function localTasks(
  env: ToolEnvironment,
  secrets: Record<string, string> = {},
): TaskProvider {
  return {
    name: env.name,
    maxTurns: env.maxTurns,
    numTasks: async (split) => {
      checkSplit(env, split);
      return await env.numTasks(split);
    },
    splits: () => Promise.resolve(env.splits),
    open: async ({ split, index }) => {
      checkSplit(env, split);
      return await env.open(await env.getTask(split, index), secrets);
    },
  };
}

function checkSplit(env: ToolEnvironment, split: string): void {
  if (!env.splits.some((s) => s.name === split)) {
    throw new Error(
      `${env.name} has no split ${JSON.stringify(split)} (splits: ${
        env.splits.map((s) => s.name).join(", ")
      })`,
    );
  }
}

/** What the agent is told when its message calls no tool (OpenReward's trainer's words). */
export const NO_TOOL_CALL_MESSAGE =
  "No tool call detected. Please use the provided tools to complete the task.";

/** Options of {@link ToolTaskEnv}. */
export interface ToolTaskEnvOptions {
  /** Registry id (default `tool:<name>`). */
  id?: string;
  /** The split whose tasks reset draws (default `train`). */
  split?: string;
  /** Turn limit (default: the provider's, else 32). */
  maxTurns?: number;
  /** The local models meant for it (`Env.localModels`). */
  localModels?: LocalModels;
}

interface OpenedTask {
  index: number;
  opening: Message[];
  tools: ToolSpec[];
}

/**
 * A message environment over a tool environment's tasks. `reset(seed)` plays task
 * `seed mod numTasks(split)`; `spawn(true)` right after reset gives a copy on the same task (a
 * group's episodes), which opens its own session when it first steps; the first copy takes over
 * the session reset opened. `close()` ends the session (the rollout calls it when an episode ends).
 *
 * @example
 * const env = new ToolTaskEnv(orsClient.environment("whodunit-v0-easy"));
 * const { messages } = await env.reset(3);
 * const episode = await runEpisode(env, messages, sampler, { maxTokensPerTurn: 256 });
 */
export class ToolTaskEnv implements MessageEnv {
  readonly kind = "message";
  readonly id: string;
  readonly maxTurns: number;
  /** Where the tasks come from. */
  readonly provider: TaskProvider;
  /** The split episodes are drawn from. */
  readonly split: string;
  readonly localModels?: LocalModels;
  readonly #opts: ToolTaskEnvOptions;
  #task: OpenedTask | null = null;
  #session: TaskSession | null = null;
  /** The open session has not been stepped: a copy may take it over. */
  #fresh = false;
  #numTasks: Promise<number> | null = null;

  /** An environment over `provider`'s tasks (`opts.split`, default `train`). */
  constructor(provider: TaskProvider, opts: ToolTaskEnvOptions = {}) {
    this.provider = provider;
    this.#opts = opts;
    this.id = opts.id ?? `tool:${provider.name}`;
    this.split = opts.split ?? "train";
    this.maxTurns = opts.maxTurns ?? provider.maxTurns ?? 32;
    if (opts.localModels) this.localModels = opts.localModels;
  }

  /** The tools of the current task (none before reset). */
  get tools(): readonly ToolSpec[] {
    return this.#task?.tools ?? [];
  }

  /** The index of the current task, or null before reset. */
  get taskIndex(): number | null {
    return this.#task?.index ?? null;
  }

  async reset(seed = 0): Promise<{ messages: Message[]; info: Record<string, unknown> }> {
    await this.close();
    this.#numTasks ??= this.provider.numTasks(this.split);
    const n = await this.#numTasks;
    if (n <= 0) throw new Error(`${this.provider.name}: split ${this.split} has no tasks`);
    const index = ((seed % n) + n) % n;
    const session = await this.provider.open({ split: this.split, index });
    try {
      const [blocks, tools] = await Promise.all([session.prompt(), session.tools()]);
      this.#task = {
        index,
        opening: [{ role: "user", content: blocksText(blocks) }],
        tools: [...tools],
      };
    } catch (e) {
      await session.close?.();
      throw e;
    }
    this.#session = session;
    this.#fresh = true;
    return {
      messages: this.#task.opening,
      info: { env: this.provider.name, split: this.split, index },
    };
  }

  async step(action: Message): Promise<MessageStepResult> {
    const task = this.#task;
    if (!task) throw new Error(`${this.id}: call reset() before step()`);
    const calls = action.toolCalls ?? [];
    if (calls.length === 0) {
      return {
        messages: [{ role: "user", content: NO_TOOL_CALL_MESSAGE }],
        reward: 0,
        rewards: [],
        failedToolCalls: 0,
        terminated: false,
        truncated: false,
        info: { reason: "no_tool_call" },
      };
    }
    this.#session ??= await this.provider.open({ split: this.split, index: task.index });
    this.#fresh = false;
    const messages: Message[] = [];
    const rewards: number[] = [];
    let failed = 0, finished = false;
    for (const call of calls) {
      if (finished) break; // calls after the one that ended the episode are not made
      const args = call.arguments;
      const res: RunToolOutput = args !== null && typeof args === "object" && !Array.isArray(args)
        ? await this.#session.call(call.name, args)
        : { ok: false, error: `Tool input must be a JSON object, got ${JSON.stringify(args)}` };
      const id = call.id ? { toolCallId: call.id } : {};
      if (res.ok) {
        messages.push({ role: "tool", content: blocksText(res.output.blocks), ...id });
        if (res.output.reward !== null) rewards.push(res.output.reward);
        finished ||= res.output.finished;
      } else {
        failed++;
        messages.push({ role: "tool", content: `Error: ${res.error}`, ...id });
      }
    }
    if (finished) await this.close();
    return {
      messages,
      reward: rewards.reduce((a, b) => a + b, 0),
      rewards,
      failedToolCalls: failed,
      terminated: finished,
      truncated: false,
      info: { reason: finished ? "finished" : failed ? "tool_error" : "tool_call" },
    };
  }

  spawn(sameState = false): ToolTaskEnv {
    const copy = new ToolTaskEnv(this.provider, this.#opts);
    copy.#numTasks = this.#numTasks;
    if (sameState && this.#task) {
      if (this.#session && !this.#fresh) {
        throw new Error(`${this.id}: a session cannot be copied once it has been stepped`);
      }
      copy.#task = this.#task;
      if (this.#session) {
        copy.#session = this.#session;
        copy.#fresh = true;
        this.#session = null;
      }
    }
    return copy;
  }

  /** Ends the open session, if any (idempotent). */
  async close(): Promise<void> {
    const s = this.#session;
    this.#session = null;
    this.#fresh = false;
    await s?.close?.();
  }
}
