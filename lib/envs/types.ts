/**
 * The environment interfaces. Two shapes, one rollout:
 *
 * - {@link Env}, GEM's text shape: a text observation in, the reply's text out, a reward per step,
 *   and `spawn` to clone an environment (in the same state, for GRPO groups). Every game and the
 *   arithmetic task are text environments.
 * - {@link MessageEnv}, the message-level shape: chat messages in, the assistant's message out
 *   (its content and parsed tool calls), messages back (tool results, user replies). An
 *   environment that declares tools, or whose step is an HTTP call (an Open Reward Standard
 *   server), is written in this shape.
 *
 * Both may answer synchronously or with promises ({@link Awaitable}); callers always `await`.
 * The rollout plays message environments; a text environment is adapted by
 * {@link asMessageEnv} (in `./message_env.ts`).
 *
 * @module
 */

import type { Awaitable } from "../rl/types.ts";
import type { Message, ToolSpec } from "../renderers/types.ts";
import type { LocalModels } from "./local_models.ts";

/** What `step` returns. */
export interface StepResult {
  /** What the agent sees next (feedback and, for board games, the board). */
  observation: string;
  /** This step's reward; GEM games shape it so an episode's rewards sum to at most 1. */
  reward: number;
  /** The episode ended by the rules (won, lost, invalid action). */
  terminated: boolean;
  /** The episode was cut off (turn limit). */
  truncated: boolean;
  /** Diagnostics: `reason` (why the step scored what it did) and `turn`; not for the agent. */
  info: Record<string, unknown>;
}

/** A text environment (GEM's shape). */
export interface Env {
  /** Registry id, e.g. `game:GuessTheNumber-v0-easy`. */
  readonly id: string;
  /** Most steps an episode can take. */
  readonly maxTurns: number;
  /** Starts an episode; the same seed gives the same episode. */
  reset(seed?: number): Awaitable<{ observation: string; info: Record<string, unknown> }>;
  /** Applies the agent's text action (the reply's content, without thinking). */
  step(action: string): Awaitable<StepResult>;
  /**
   * A new environment of the same id; with `sameState`, a deep copy in this one's current state,
   * so a GRPO group can play several completions from one start. Without it, call `reset` first.
   */
  spawn(sameState?: boolean): Env;
  /** The local models meant for it (`./local_models.ts`); absent: any. */
  readonly localModels?: LocalModels;
}

/**
 * A text environment that answers synchronously, as every built-in game does: scripted players
 * (the pretraining transcripts) try moves on copies without awaiting.
 */
export interface SyncEnv extends Env {
  /** Starts an episode (seeded: reproducible). */
  reset(seed?: number): { observation: string; info: Record<string, unknown> };
  /** Plays one action. */
  step(action: string): StepResult;
  /** A copy of the env: reset, or in this episode's state with `sameState`. */
  spawn(sameState?: boolean): SyncEnv;
}

/** What a message environment's `step` returns. */
export interface MessageStepResult {
  /** The messages that answer the action: tool results (role `tool`), a user reply, or both. */
  messages: Message[];
  /** The action's reward. */
  reward: number;
  /** The episode ended by the rules. */
  terminated: boolean;
  /** The episode was cut off (turn limit). */
  truncated: boolean;
  /** Diagnostics (`reason`, ...); not for the agent. */
  info: Record<string, unknown>;
  /**
   * The rewards the environment gave in this step, one per call that gave one (an Open Reward
   * tool output's reward may be null: such calls are left out); absent means `[reward]`.
   * `reward` is their sum.
   */
  rewards?: number[];
  /** Tool calls of the action that failed (unknown tool, invalid input). */
  failedToolCalls?: number;
}

/**
 * A message-level environment: it opens a conversation, receives each assistant message with
 * its parsed tool calls, and answers with messages.
 *
 * @example
 * class Calculator implements MessageEnv {
 *   readonly kind = "message";
 *   readonly id = "my:Calculator-v0";
 *   readonly maxTurns = 3;
 *   readonly tools = [{ name: "add", description: "a + b", parameters: { type: "object",
 *     properties: { a: { type: "number" }, b: { type: "number" } } } }];
 *   reset() { return { messages: [{ role: "user" as const, content: "What is 2 + 3? Use add." }], info: {} }; }
 *   async step(reply: Message) {
 *     const call = reply.toolCalls?.[0];
 *     const { a, b } = (call?.arguments ?? {}) as { a: number; b: number };
 *     const ok = call?.name === "add" && a + b === 5;
 *     return { messages: [{ role: "tool" as const, content: String(a + b) }], reward: ok ? 1 : 0,
 *       terminated: true, truncated: false, info: {} };
 *   }
 *   spawn() { return new Calculator(); }
 * }
 */
export interface MessageEnv {
  /** Tells message environments from text ones. */
  readonly kind: "message";
  /** Registry id. */
  readonly id: string;
  /** Most steps an episode can take. */
  readonly maxTurns: number;
  /** Tools the agent may call: declared in the prompt, parsed from replies. */
  readonly tools?: readonly ToolSpec[];
  /** Starts an episode: the opening messages (a system message, then the task). */
  reset(seed?: number): Awaitable<{ messages: Message[]; info: Record<string, unknown> }>;
  /** Applies the assistant's message (content, thinking, tool calls). */
  step(action: Message): Awaitable<MessageStepResult>;
  /** As {@link Env.spawn}. */
  spawn(sameState?: boolean): MessageEnv;
  /** As {@link Env.localModels}. */
  readonly localModels?: LocalModels;
  /**
   * Releases what the episode holds (an Open Reward session); the rollout calls it when an
   * episode ends, and on a group's reset copy once its episodes are done.
   */
  close?(): Awaitable<void>;
}

/** Either shape; the registry holds both. */
export type AnyEnv = Env | MessageEnv;

/** Whether an environment is message-level. */
export function isMessageEnv(env: AnyEnv): env is MessageEnv {
  return (env as MessageEnv).kind === "message";
}

/** The integer in the last `\boxed{…}` of a text, or null when there is none. */
export function lastBoxedInteger(text: string): number | null {
  const m = [...text.matchAll(/\\boxed\{\s*([+-]?\d+)\s*\}/g)].at(-1);
  return m ? Number(m[1]) : null;
}
