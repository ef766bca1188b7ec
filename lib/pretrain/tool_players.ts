/**
 * Format players of the tool environments, whose episodes become `local/tools`' pretraining
 * transcripts: every move is a `<tool_call>` with valid JSON arguments, as the format is the
 * point; the strategy stays RL's, as for the text games' players (`players.ts`).
 *
 * - Tool games (`tool:<Game>-v0-<level>`, `tool:Arithmetic-v0-<level>`): the text game's own
 *   format player plays a shadow copy of the game (same seed), and its `\boxed{…}` move becomes
 *   the game's tool call (`guess {"number": 7}`, `move {"from": "A", "to": "C"}`); the
 *   GuessTheNumber range it states stays in the message's text before the call. Every tool
 *   answer is checked against the shadow's observation, so the two never drift apart.
 * - WhoDunIt: lists the suspects, weapons and rooms (and motives), reads a random subset (each with chance 0.3) of the
 *   clues, statements and exhibits, then submits, for each part, an item that nothing it read
 *   cleared (so it reads tool answers; how much to read is left to RL).
 * - Word problems: the correct answer through `answer` (a verifier task: the format is the point).
 * - Unseen tools: the asked call, copied from the request; in a quarter of episodes one value is
 *   another word of the request instead, so a base model does not always get it right.
 *
 * @module
 */

import type { Message, ToolCall } from "../renderers/types.ts";
import type { MessageEnv } from "../envs/types.ts";
import { makeBuiltin } from "../envs/registry.ts";
import { ToolTaskEnv } from "../envs/tool_task_env.ts";
import { generateWordProblem } from "../envs/word_problems.ts";
import type { Rng } from "../util/random.ts";
import { envFamily, formatPlayer, LEGAL_REASONS } from "./players.ts";
import { UnseenToolsEnv } from "./unseen_tools.ts";

/** Chooses the assistant's message each turn of one episode of a message environment. */
export interface ToolPlayer {
  /** The next assistant message, given what the environment said last. */
  act(observation: readonly Message[], rng: Rng): Message;
  /**
   * The last move again, given what the environment said to it: a mistake the game answers as
   * it would a model's (`You already guessed 7.`). Null where there is no last move or repeating
   * one is not a mistake in the game.
   */
  repeat?(observation: readonly Message[]): Message | null;
}

/** Options of {@link toolPlayer}. */
export interface ToolPlayerOptions {
  /** Share of GuessTheNumber episodes played by bisection (as the text game's player). */
  bisectShare?: number;
}

/**
 * A new player for one episode of `envId`, played on `env` (already reset; a tool game's
 * player reads its task's seed from it).
 *
 * @example
 * const env = make("tool:WordProblems-v0") as MessageEnv;
 * const { messages } = await env.reset(3);
 * const move = toolPlayer("tool:WordProblems-v0", env).act(messages, rng);
 */
export function toolPlayer(
  envId: string,
  env: MessageEnv,
  opts: ToolPlayerOptions = {},
): ToolPlayer {
  if (env instanceof UnseenToolsEnv) return unseenToolsPlayer(env);
  if (!(env instanceof ToolTaskEnv)) throw new Error(`no tool player for ${envId}`);
  const family = envFamily(envId);
  if (family === "WordProblems") {
    const answer = generateWordProblem(taskSeed(env)).answer;
    return { act: () => call("", "answer", { answer }) };
  }
  if (family === "WhoDunIt") return new Detective(env.tools.some((t) => t.name === "list_motives"));
  const level = envId.split("-").at(-1);
  const textId = `${family === "Arithmetic" ? "math" : "game"}:${family}-v0-${level}`;
  return new GameMover(textId, taskSeed(env), opts);
}

/** The seed the tool environment reset its task with (train split: the task's index). */
function taskSeed(env: ToolTaskEnv): number {
  if (env.split !== "train" || env.taskIndex === null) {
    throw new Error(`${env.id}: tool players play the train split after reset`);
  }
  return env.taskIndex;
}

/** An assistant message: optional text, then one tool call. */
function call(content: string, name: string, args: Record<string, unknown>): Message {
  return { role: "assistant", content, toolCalls: [{ name, arguments: args }] };
}

/** The text of what the environment said (its tool answers, or a user message). */
function said(observation: readonly Message[]): string {
  return observation.map((m) => m.content).join("\n");
}

/**
 * Games whose player reads every answer it is given (so answers to a repeat and to the move
 * before it can be given together) and in which a repeated move is a mistake the game names.
 */
const REPEAT_IS_MISTAKE = new Set(["GuessTheNumber"]);

/** A tool game: the text game's format player on a shadow copy, its moves as tool calls. */
class GameMover implements ToolPlayer {
  readonly #game;
  readonly #family: string;
  readonly #player;
  /** What the game said since the player last moved (answers to repeats included). */
  #observation: string;
  #unread = false;
  /** The move the environment was last given, answered by the next observation. */
  #pending: { move: string; repeated: boolean } | null = null;

  constructor(textId: string, seed: number, opts: ToolPlayerOptions) {
    this.#game = makeBuiltin(textId);
    this.#family = envFamily(textId);
    this.#player = formatPlayer(textId, opts);
    this.#observation = this.#game.reset(seed).observation;
  }

  act(observation: readonly Message[], rng: Rng): Message {
    this.#follow(observation);
    const move = this.#player.act(this.#game, this.#observation, rng);
    this.#unread = false;
    this.#pending = { move, repeated: false };
    return boxedAsCall(this.#family, move);
  }

  repeat(observation: readonly Message[]): Message | null {
    if (this.#pending === null || !REPEAT_IS_MISTAKE.has(this.#family)) return null;
    this.#follow(observation);
    this.#unread = true;
    this.#pending = { move: this.#pending.move, repeated: true };
    return boxedAsCall(this.#family, this.#pending.move);
  }

  /** Plays the pending move on the shadow and checks the environment answered the same. */
  #follow(observation: readonly Message[]): void {
    if (this.#pending === null) return;
    const { move, repeated } = this.#pending;
    const step = this.#game.step(move);
    if (!repeated && !LEGAL_REASONS[this.#family].includes(String(step.info.reason))) {
      throw new Error(`${this.#game.id}: the player's move ${move} was illegal`);
    }
    if (said(observation) !== step.observation) {
      throw new Error(`${this.#game.id}: the tool answered other than the game`);
    }
    this.#observation = this.#unread
      ? `${this.#observation}\n${step.observation}`
      : step.observation;
  }
}

/**
 * A text game's move as its tool call (the inverse of `lib/envs/tool_games.ts`' tools), the
 * text before `\boxed{` kept as the message's content.
 */
export function boxedAsCall(family: string, move: string): Message {
  const m = move.match(/^(.*?)\s*\\boxed\{(.*)\}$/s);
  if (!m) throw new Error(`not a boxed move: ${JSON.stringify(move)}`);
  const [, text, inner] = m;
  switch (family) {
    case "GuessTheNumber":
      return call(text, "guess", { number: Number(inner) });
    case "Mastermind":
      return call(text, "guess", { code: inner.split(" ").map(Number) });
    case "Hangman":
      return call(text, "guess", { letters: inner });
    case "TowerofHanoi": {
      const [from, to] = inner.split(" ");
      return call(text, "move", { from, to });
    }
    case "Minesweeper": {
      const [verb, row, col] = inner.split(" ");
      return call(text, verb, { row: Number(row), col: Number(col) });
    }
    case "FifteenPuzzle":
      return call(text, "slide", { direction: inner });
    case "Arithmetic":
      return call(text, "answer", { answer: Number(inner) });
    default:
      throw new Error(`no tool for ${family}`);
  }
}

const REQUIRED = ["list_suspects", "list_weapons", "list_locations"];
const OPTIONAL = ["list_clues", "list_statements", "list_exhibits"];

/**
 * WhoDunIt: the lists it needs to name an answer, a random share of the other sources, then
 * for each part an item no fact it read mentions.
 */
class Detective implements ToolPlayer {
  readonly #plan: string[] = [];
  readonly #answers = new Map<string, string>();
  readonly #exhibits: string[] = [];
  #asked: string | null = null;
  #planned = false;

  constructor(readonly motive: boolean) {}

  act(observation: readonly Message[], rng: Rng): Message {
    if (this.#asked !== null) this.#answers.set(this.#asked, said(observation));
    if (!this.#planned) {
      const required = [...REQUIRED, ...(this.motive ? ["list_motives"] : [])];
      const optional = OPTIONAL.filter(() => rng.uniform() < 0.3);
      this.#plan.push(...shuffled([...required, ...optional], rng));
      this.#planned = true;
    }
    if (this.#asked === "list_exhibits") {
      for (const line of this.#answers.get("list_exhibits")!.split("\n")) {
        const id = line.split(":")[0];
        if (/^E\d+$/.test(id) && rng.uniform() < 0.5) this.#plan.push(`view_exhibit ${id}`);
      }
    }
    const next = this.#plan.shift();
    if (next !== undefined) {
      this.#asked = next;
      const [name, id] = next.split(" ");
      return call("", name, id ? { exhibit_id: id } : {});
    }
    const facts = [...this.#answers].filter(([k]) => !REQUIRED.includes(k) && k !== "list_motives")
      .map(([, v]) => v).join("\n");
    const pick = (items: string[]) => {
      const left = items.filter((x) =>
        !new RegExp(`\\b${x.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\b`, "i").test(facts)
      );
      const pool = left.length ? left : items;
      return pool[rng.int(pool.length)];
    };
    const lines = (tool: string) => this.#answers.get(tool)!.split("\n");
    const answer: Record<string, string> = {
      suspect: pick(lines("list_suspects").map((l) => l.split(",")[0])),
      weapon: pick(lines("list_weapons")),
      location: pick(lines("list_locations")),
    };
    if (this.motive) answer.motive = pick(lines("list_motives"));
    this.#asked = null;
    return call("", "submit_answer", answer);
  }
}

/** Unseen tools: the asked calls, one per turn, a value swapped in a quarter of episodes. */
function unseenToolsPlayer(env: UnseenToolsEnv): ToolPlayer {
  const task = env.task;
  if (!task) throw new Error("unseen tools: reset the environment before making its player");
  let turn = 0, slipped: boolean | null = null;
  return {
    act(_observation, rng) {
      slipped ??= rng.uniform() < 0.25;
      const want = task.calls[turn++];
      const args = { ...(want.arguments as Record<string, unknown>) };
      if (slipped && turn === 1) slip(args, task.prompt, rng);
      const c: ToolCall = { name: want.name, arguments: args };
      return { role: "assistant", content: "", toolCalls: [c] };
    },
  };
}

/** Replaces one argument's value with another word of the request (or another number). */
function slip(args: Record<string, unknown>, prompt: string, rng: Rng): void {
  const keys = Object.keys(args);
  if (keys.length === 0) return;
  const k = keys[rng.int(keys.length)];
  const v = args[k];
  if (typeof v === "number") args[k] = rng.int(101);
  else if (typeof v === "boolean") args[k] = !v;
  else {
    const words = prompt.match(/[A-Za-z]+/g) ?? [String(v)];
    args[k] = words[rng.int(words.length)];
  }
}

function shuffled<T>(xs: T[], rng: Rng): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}
