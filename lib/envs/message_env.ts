/**
 * A text environment seen as a message environment: its observation is a user message, the
 * assistant's content is its action, and its reply is the next user message. The rollout plays
 * message environments only, so text and tool-using environments share one loop.
 *
 * @module
 */

import type { Message } from "../renderers/types.ts";
import {
  type AnyEnv,
  type Env,
  isMessageEnv,
  type MessageEnv,
  type MessageStepResult,
} from "./types.ts";

/** A text environment adapted to the message shape (message environments pass through). */
export function asMessageEnv(env: AnyEnv): MessageEnv {
  return isMessageEnv(env) ? env : new TextAsMessageEnv(env);
}

class TextAsMessageEnv implements MessageEnv {
  readonly kind = "message";
  readonly #env: Env;

  constructor(env: Env) {
    this.#env = env;
  }

  get id(): string {
    return this.#env.id;
  }

  /** Read live: random variants pick their turn limit at reset. */
  get maxTurns(): number {
    return this.#env.maxTurns;
  }

  async reset(seed?: number): Promise<{ messages: Message[]; info: Record<string, unknown> }> {
    const { observation, info } = await this.#env.reset(seed);
    return { messages: [{ role: "user", content: observation }], info };
  }

  async step(action: Message): Promise<MessageStepResult> {
    const r = await this.#env.step(action.content);
    return {
      messages: [{ role: "user", content: r.observation }],
      reward: r.reward,
      terminated: r.terminated,
      truncated: r.truncated,
      info: r.info,
    };
  }

  spawn(sameState?: boolean): MessageEnv {
    return new TextAsMessageEnv(this.#env.spawn(sameState));
  }
}
