/**
 * Observation wrappers with GEM's semantics (`gem/wrappers/observation_wrapper.py`): multi-turn
 * agents are usually trained on the whole history, not the last message, and these turn a
 * game's per-turn messages into that history.
 *
 * - `concat`: every observation so far, one per line; the agent's actions are left out.
 * - `concat_with_action`: observations and actions interleaved.
 * - `concat_chat`: the history as chat messages (user = observations, assistant = actions), in
 *   `info.messages`, and rendered to text with a chat template (ChatML by default; pass the
 *   model's renderer to match its tokenizer, as GEM applies the tokenizer's template).
 *
 * As in GEM, an action is recorded as `info.parsed_action` when the env reports one, and
 * `info.prefix` / `info.suffix` (e.g. the current board) are put around the rendered history.
 *
 * @module
 */

import { type AnyEnv, type Env, isMessageEnv, type StepResult } from "./types.ts";

/** One chat message of the history. */
export interface HistoryMessage {
  /** Who speaks. */
  role: "user" | "assistant";
  /** What was said. */
  content: string;
}

/** Renders chat messages to a prompt ending where the assistant's reply starts. */
export type ChatTemplate = (messages: HistoryMessage[]) => string;

/** The wrapper names, as GEM's `wrapper_factory` spells them. */
export type WrapperName = "concat" | "concat_with_action" | "concat_chat";

/** ChatML (`<|im_start|>role … <|im_end|>`) with the generation prompt, the Qwen-style default. */
export const chatml: ChatTemplate = (messages): string =>
  messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join("") +
  "<|im_start|>assistant\n";

function withNewline(text: string): string {
  return text && !text.endsWith("\n") ? text + "\n" : text;
}

/** An env whose observations are the rendered history of the wrapped env's episode. */
export class ObservationWrapper implements Env {
  readonly id: string;
  /** How the history is rendered. */
  readonly mode: WrapperName;
  #env: Env;
  #template: ChatTemplate;
  #observations: string[] = [];
  #actions: string[] = [];

  /** Wraps `env`, rendering its history in `mode` with `template`. */
  constructor(env: Env, mode: WrapperName, template: ChatTemplate = chatml) {
    this.#env = env;
    this.mode = mode;
    this.#template = template;
    this.id = env.id;
  }

  /** The wrapped env's turn limit (read live: `-random` variants change it at reset). */
  get maxTurns(): number {
    return this.#env.maxTurns;
  }

  /** The history as chat messages, ending with the latest observation. */
  messages(): HistoryMessage[] {
    const out: HistoryMessage[] = [];
    this.#observations.forEach((o, i) => {
      out.push({ role: "user", content: o });
      if (i < this.#actions.length) out.push({ role: "assistant", content: this.#actions[i] });
    });
    return out;
  }

  async reset(seed?: number): Promise<{ observation: string; info: Record<string, unknown> }> {
    const { observation, info } = await this.#env.reset(seed);
    this.#observations = [observation];
    this.#actions = [];
    return { observation: this.#render(info), info: this.#info(info) };
  }

  async step(action: string): Promise<StepResult> {
    const r = await this.#env.step(action);
    const parsed = r.info.parsed_action;
    this.#actions.push(typeof parsed === "string" ? parsed : action);
    this.#observations.push(r.observation);
    return { ...r, observation: this.#render(r.info), info: this.#info(r.info) };
  }

  /** Wraps a spawn of the inner env; with `sameState` the history is copied too. */
  spawn(sameState = false): Env {
    const w = new ObservationWrapper(this.#env.spawn(sameState), this.mode, this.#template);
    if (sameState) {
      w.#observations = [...this.#observations];
      w.#actions = [...this.#actions];
    }
    return w;
  }

  #info(info: Record<string, unknown>): Record<string, unknown> {
    return this.mode === "concat_chat" ? { ...info, messages: this.messages() } : info;
  }

  #render(info: Record<string, unknown>): string {
    let text: string;
    if (this.mode === "concat") {
      text = this.#observations.map(withNewline).join("");
    } else if (this.mode === "concat_with_action") {
      text = this.messages().map((m) => withNewline(m.content)).join("");
    } else {
      text = this.#template(this.messages());
    }
    if (typeof info.prefix === "string") text = info.prefix + text;
    if (typeof info.suffix === "string") text = text + info.suffix;
    return text;
  }
}

/** Wraps an env by GEM wrapper name; an unknown name is an error listing the known ones. */
export function wrap(env: Env, name: string, template?: ChatTemplate): Env {
  const known: WrapperName[] = ["concat", "concat_with_action", "concat_chat"];
  if (!(known as string[]).includes(name)) {
    throw new Error(`unknown wrapper ${JSON.stringify(name)}. Known: ${known.join(", ")}`);
  }
  return new ObservationWrapper(env, name as WrapperName, template);
}

/**
 * An env wrapped by GEM's comma-separated wrapper list (`env_wrappers: concat`), innermost
 * first; an empty list leaves it as it is. Only text envs take GEM's wrappers.
 *
 * @example
 * const env = wrapAll(make("game:GuessTheNumber-v0-easy"), "concat");
 */
export function wrapAll(env: AnyEnv, wrappers: string, template?: ChatTemplate): AnyEnv {
  const names = wrappers.split(",").map((w) => w.trim()).filter(Boolean);
  if (names.length === 0) return env;
  if (isMessageEnv(env)) {
    throw new Error(`env_wrappers ${JSON.stringify(wrappers)}: ${env.id} is a message env`);
  }
  return names.reduce((e: Env, name) => wrap(e, name, template), env);
}
