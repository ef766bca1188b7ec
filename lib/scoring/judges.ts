/**
 * Judges and the teacher, on any sampler: a PRM judge (M votes, majority, ties give 0), a hint
 * judge (M votes, the longest accepted hint), and teacher log-probs of the student's exact
 * response tokens with the hint appended to the last user message.
 *
 * A judge is a {@link ChatSampler}: a Tinker sampling client with a renderer (the default: the
 * teacher model doubles as judge, as in OpenClaw), or any OpenAI-compatible endpoint by URL.
 *
 * @module
 */

import { z } from "zod";
import type { Message, Renderer } from "../renderers/types.ts";
import { ModelInput, type SamplingClient } from "../tinker/mod.ts";
import { hintJudgeMessages, type JudgedTurn, prmJudgeMessages } from "./prompts.ts";
import {
  appendHintToMessages,
  type JudgeMessage,
  majorityVote,
  parseHintVote,
  selectBestHint,
  type Vote,
} from "./rules.ts";
import { formatZodError } from "../util/zod.ts";

export type { JudgedTurn } from "./prompts.ts";

/** How a judge samples: M outputs per question. */
export interface JudgeSampling {
  /** Number of independent outputs (OpenClaw's `prm_m`). */
  m: number;
  /** Sampling temperature. */
  temperature: number;
  /** Token limit of each output. */
  maxTokens: number;
  /** Seeds output i with seed + i, so judged runs are reproducible on the local backend. */
  seed?: number;
}

/** A chat model that answers with M independent completions. */
export interface ChatSampler {
  /** What the judge runs on, for logs (a model name or a URL). */
  readonly name: string;
  /** Answers `messages` with `sampling.m` independent completions. */
  complete(messages: JudgeMessage[], sampling: JudgeSampling): Promise<string[]>;
}

/**
 * A judge on a Tinker sampling client: messages rendered by the model's renderer, sampled with
 * OpenClaw's top-k 50 / top-p 0.95, responses parsed (thinking dropped).
 */
export class TinkerChatSampler implements ChatSampler {
  readonly name: string;
  readonly #sampler: SamplingClient;
  readonly #renderer: Renderer;

  /** A judge on `sampler`, whose messages `renderer` renders; `name` shows in logs. */
  constructor(sampler: SamplingClient, renderer: Renderer, name = sampler.baseModel) {
    this.#sampler = sampler;
    this.#renderer = renderer;
    this.name = name || "tinker sampler";
  }

  /** Answers `messages` with `s.m` completions, sampled in one request. */
  async complete(messages: JudgeMessage[], s: JudgeSampling): Promise<string[]> {
    const prompt = this.#renderer.buildGenerationPrompt(messages as Message[]);
    const res = await this.#sampler.sample({
      prompt: ModelInput.fromInts(prompt),
      numSamples: s.m,
      samplingParams: {
        maxTokens: s.maxTokens,
        temperature: s.temperature,
        topK: 50,
        topP: 0.95,
        seed: s.seed,
        stop: this.#renderer.stopSequences(),
      },
    });
    return res.sequences.map((q) => this.#renderer.parseResponse(q.tokens).message.content);
  }
}

const ChatCompletionSchema = z.object({
  choices: z.array(z.object({ message: z.object({ content: z.string().nullable() }) })).min(1),
});

/**
 * A judge on an OpenAI-compatible endpoint (`POST {baseUrl}/chat/completions`), M concurrent
 * requests of one completion each (servers differ in their support of `n`).
 *
 * @example
 * const judge = new OpenAIChatSampler({ baseUrl: "http://localhost:8000/v1", model: "qwen3-8b" });
 */
export class OpenAIChatSampler implements ChatSampler {
  readonly name: string;
  readonly #url: string;
  readonly #model: string;
  readonly #apiKey?: string;
  readonly #fetch: typeof fetch;

  /** A judge on `o.model` at `o.baseUrl` (with `o.apiKey` as a bearer token, if given). */
  constructor(
    o: { baseUrl: string; model: string; apiKey?: string; fetch?: typeof fetch },
  ) {
    this.#url = `${o.baseUrl.replace(/\/+$/, "")}/chat/completions`;
    this.#model = o.model;
    this.#apiKey = o.apiKey;
    this.#fetch = o.fetch ?? fetch;
    this.name = `${o.model} at ${o.baseUrl}`;
  }

  /** Answers `messages` with `s.m` concurrent requests (output i seeded with seed + i). */
  async complete(messages: JudgeMessage[], s: JudgeSampling): Promise<string[]> {
    return await Promise.all(Array.from({ length: s.m }, async (_, i) => {
      const res = await this.#fetch(this.#url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(this.#apiKey ? { authorization: `Bearer ${this.#apiKey}` } : {}),
        },
        body: JSON.stringify({
          model: this.#model,
          messages,
          temperature: s.temperature,
          max_tokens: s.maxTokens,
          top_p: 0.95,
          ...(s.seed === undefined ? {} : { seed: s.seed + i }),
        }),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`judge ${this.#url}: HTTP ${res.status}: ${text.slice(0, 200)}`);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new Error(`judge ${this.#url}: the response is not JSON: ${text.slice(0, 200)}`);
      }
      const parsed = ChatCompletionSchema.safeParse(body);
      if (!parsed.success) {
        throw new Error(`judge ${this.#url}: bad response: ${formatZodError(parsed.error)}`);
      }
      return parsed.data.choices[0].message.content ?? "";
    }));
  }
}

/** A PRM judgement of one turn: the majority score, every vote, and every output. */
export interface PrmJudgement {
  /** The majority vote. */
  score: Vote;
  /** Each output's vote (null: no valid `\boxed{}`). */
  votes: (Vote | null)[];
  /** One output that voted as the majority did. */
  representative: string | null;
  /** The judge's outputs, as written. */
  outputs: string[];
}

/**
 * Scores a turn from its next state: M PRM votes, the last `\boxed{}` of each, majority with
 * ties and invalid votes giving 0.
 */
export async function judgeTurn(
  judge: ChatSampler,
  turn: JudgedTurn,
  sampling: JudgeSampling,
): Promise<PrmJudgement> {
  const outputs = await judge.complete(prmJudgeMessages(turn), sampling);
  const { score, votes, representative } = majorityVote(outputs);
  return { score, votes, representative, outputs };
}

/** A hint judgement: the selected hint (or null), every decision, and every output. */
export interface HintJudgement {
  /** The longest accepted hint, or null. */
  hint: string | null;
  /** Each output's decision (1 accept, -1 reject, null invalid). */
  decisions: (1 | -1 | null)[];
  /** The judge's outputs, as written. */
  outputs: string[];
}

/** Asks for hindsight hints M times and keeps the longest accepted one (> 10 characters). */
export async function extractHint(
  judge: ChatSampler,
  turn: JudgedTurn,
  sampling: JudgeSampling,
): Promise<HintJudgement> {
  const outputs = await judge.complete(hintJudgeMessages(turn), sampling);
  return {
    hint: selectBestHint(outputs),
    decisions: outputs.map((o) => parseHintVote(o).decision),
    outputs,
  };
}

/**
 * The teacher's log-probs of the student's exact response tokens, given the turn's messages
 * with `hint` appended to the last user message (re-rendered by the teacher's renderer).
 * One `compute_logprobs` call: the values after the prompt are the response's.
 */
export async function teacherLogprobs(
  teacher: SamplingClient,
  renderer: Renderer,
  messages: JudgeMessage[],
  hint: string,
  responseTokens: number[],
): Promise<number[]> {
  if (responseTokens.length === 0) return [];
  const prompt = renderer.buildGenerationPrompt(appendHintToMessages(messages, hint) as Message[]);
  const lps = await teacher.computeLogprobs(ModelInput.fromInts([...prompt, ...responseTokens]));
  const out = lps.slice(prompt.length);
  if (out.length !== responseTokens.length || out.some((x) => x === null || !isFinite(x))) {
    throw new Error(
      `teacher ${teacher.baseModel}: expected ${responseTokens.length} finite response log-probs`,
    );
  }
  return out as number[];
}
