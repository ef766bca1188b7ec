/**
 * One episode of an environment played by a sampler, token-in/token-out: the sampled tokens are
 * kept as sampled, never re-tokenized. Each turn renders the conversation (tools declared in the
 * system message), samples the action, parses it (content, thinking, tool calls) and gives it to
 * the environment, whose messages become the next turn's observation.
 *
 * @module
 */

import { asMessageEnv } from "../envs/message_env.ts";
import type { AnyEnv, MessageEnv, MessageStepResult } from "../envs/types.ts";
import type { SampleResponse } from "../protocol/mod.ts";
import { ChatMLRenderer } from "../renderers/chatml.ts";
import type { Message, Renderer, ToolSpec } from "../renderers/types.ts";
import { stopTexts } from "../renderers/parse.ts";
import type { Episode, EpisodeStopReason, Turn } from "../rl/types.ts";
import { ModelInput, type SampleArgs } from "../tinker/mod.ts";

/**
 * What a rollout needs of a sampler: a `SamplingClient`, or a wrapper around one (to count or
 * delay calls) without subclassing it.
 */
export interface Sampler {
  /** Samples a continuation. */
  sample(args: SampleArgs): PromiseLike<SampleResponse>;
}

/** Limits and sampling of a rollout. */
export interface RolloutOptions {
  /** Token limit of each action. */
  maxTokensPerTurn: number;
  /** Sampling temperature (default 1). */
  temperature?: number;
  /** Seeds the sampler; each turn uses seed + turn. */
  seed?: number;
  /** At most this many turns (default: the env's own limit). */
  maxTurns?: number;
  /**
   * The policy's chat format (default: ChatML over the byte tokenizer, the local models'). A
   * renderer with `continuation` (ChatML) extends each turn's prompt with the sampled tokens,
   * so a whole episode is one datum; any other (Qwen3, which drops earlier thinking) re-renders
   * the conversation each turn, and the datum builder starts a new datum where a prompt stops
   * extending the previous sequence.
   */
  renderer?: Renderer;
  /**
   * At most this many action tokens over the whole episode: a turn samples at most what is
   * left, and an episode that runs out before it ends stops with "max_tokens".
   */
  maxTokensPerEpisode?: number;
  /**
   * Wall-clock limit of the episode: past it the episode stops with "error" and `timedOut`. A
   * sample call cannot be cancelled on the server, so its late result is simply ignored.
   */
  timeoutMs?: number;
  /** Stops the episode between (or while waiting for) turns, e.g. when its group is dropped. */
  signal?: AbortSignal;
  /** The sampler's version (the training step of its weights), recorded on every turn. */
  samplerVersion?: number;
  /** Nucleus sampling (default: off). */
  topP?: number;
  /** Top-k sampling (default: off). */
  topK?: number;
  /**
   * At most this many tokens in the whole conversation, prompt included (OpenReward's
   * `max_total_tokens`): a turn samples at most what is left, and an episode that runs out stops
   * with "max_tokens".
   */
  maxTotalTokens?: number;
  /** How environments that declare tools are played. */
  toolUse?: ToolUseOptions;
}

/** How a rollout plays an environment that declares tools. */
export interface ToolUseOptions {
  /**
   * Stop sampling at the end of a tool call (`</tool_call>`) as well as at the end of the
   * message (default true): the call goes to the environment at once, and the message is closed
   * in the next prompt (weight 0), as OpenReward's trainer does.
   */
  stopAtToolCall?: boolean;
  /**
   * The reward of a turn whose tool call does not parse (default 0; negative to penalise). Such
   * a call is not sent to the environment: the rollout answers with a corrective user message
   * ({@link invalidToolCallMessage}) and the episode goes on; the episode counts it.
   */
  invalidCallReward?: number;
  /**
   * End the episode at a tool call that does not parse (stop reason `parse_error`), as
   * tinker-cookbook's `terminate_on_parse_error` does, instead of answering it and going on
   * (default false, OpenReward's trainer's way). A base model that has rarely seen its own
   * malformed call can spiral after one, and every spiral token then takes a negative
   * advantage; ending there keeps a failed episode to what went wrong.
   */
  endOnInvalidCall?: boolean;
  /** Declares the tools in the opening messages (default: the renderer's `declareTools`). */
  declareTools?: (opening: Message[], tools: readonly ToolSpec[]) => Message[];
}

/** What the agent is told when its tool call does not parse (OpenReward's trainer's words). */
export function invalidToolCallMessage(error: string): string {
  return `Tool call parse error: ${error}. Please ensure tool arguments are valid JSON.`;
}

/** Raised inside an episode that ran past its `timeoutMs`. */
export class EpisodeTimeoutError extends Error {
  /** The error's name, for logs. */
  override name = "EpisodeTimeoutError";
  /** The episode ran past `timeoutMs`. */
  constructor(readonly timeoutMs: number) {
    super(`episode timed out after ${timeoutMs} ms`);
  }
}

/**
 * Plays one episode from an environment that was already reset (its opening messages given),
 * so a group's spawned copies all start from the same state. Text environments are adapted
 * with {@link asMessageEnv}.
 *
 * @example
 * const env = asMessageEnv(make("game:GuessTheNumber-v0-easy"));
 * const { messages } = await env.reset(7);
 * const episode = await runEpisode(env, messages, sampler, { maxTokensPerTurn: 40 });
 */
export async function runEpisode(
  anyEnv: AnyEnv,
  opening: Message[],
  sampler: Sampler,
  opts: RolloutOptions,
): Promise<Episode> {
  const env: MessageEnv = asMessageEnv(anyEnv);
  const started = performance.now();
  const deadline = opts.timeoutMs === undefined ? undefined : started + opts.timeoutMs;
  const turns: Turn[] = [];
  let sampledTokens = 0;
  let stopReason: EpisodeStopReason = "max_turns";
  const tools = env.tools ?? [];
  const calls = { toolCalls: 0, failedToolCalls: 0, invalidToolCalls: 0 };
  const finish = (extra: Partial<Episode> = {}): Episode => ({
    envId: env.id,
    turns,
    totalReward: turns.reduce((a, t) => a + t.reward, 0),
    stopReason,
    ...extra,
    sampledTokens,
    durationMs: performance.now() - started,
    ...(opts.seed === undefined ? {} : { seed: opts.seed }),
    ...(tools.length ? calls : {}),
  });
  try {
    const renderer = opts.renderer ?? new ChatMLRenderer();
    const toolStop = tools.length && (opts.toolUse?.stopAtToolCall ?? true)
      ? toolCallStop(renderer)
      : null;
    // A copy: the opening is shared by every episode of a group.
    const declare = opts.toolUse?.declareTools ??
      ((m: Message[], t: readonly ToolSpec[]) => renderer.declareTools(m, t));
    const conversation: Message[] = [...declare(opening, tools)];
    let observation: Message[] = [...conversation];
    let prompt = promptTokens(renderer, conversation);
    const maxTurns = opts.maxTurns ?? env.maxTurns;
    for (let t = 0; t < maxTurns; t++) {
      opts.signal?.throwIfAborted();
      if (deadline !== undefined && performance.now() >= deadline) {
        throw new EpisodeTimeoutError(opts.timeoutMs!);
      }
      const budget = Math.min(
        opts.maxTokensPerEpisode === undefined
          ? Infinity
          : opts.maxTokensPerEpisode - sampledTokens,
        opts.maxTotalTokens === undefined ? Infinity : opts.maxTotalTokens - prompt.length,
      );
      if (budget <= 0) {
        stopReason = "max_tokens";
        break;
      }
      const res = await withinLimits(
        sampler.sample({
          prompt: { chunks: [{ type: "encoded_text", tokens: prompt }] },
          samplingParams: {
            maxTokens: Math.min(opts.maxTokensPerTurn, budget),
            temperature: opts.temperature ?? 1,
            ...(opts.topP === undefined ? {} : { topP: opts.topP }),
            ...(opts.topK === undefined ? {} : { topK: opts.topK }),
            seed: opts.seed === undefined ? undefined : opts.seed + t,
            stop: toolStop?.stop ?? renderer.stopSequences(),
          },
        }),
        opts,
        deadline,
      );
      const seq = res.sequences[0];
      sampledTokens += seq.tokens.length;
      // Stopped at the end of a tool call: the message is complete, closed by the renderer's
      // end token in the next prompt (not sampled, so not trained).
      const closing = toolStop && endsWith(seq.tokens, toolStop.close) ? toolStop.end : [];
      const parsed = renderer.parseResponse([...seq.tokens, ...closing]);
      const invalidCall = tools.length > 0 && parsed.ok && parsed.error !== undefined;
      const step: MessageStepResult = invalidCall
        ? invalidCallStep(parsed.error!, opts.toolUse?.invalidCallReward ?? 0)
        : await withinLimits(env.step(parsed.message), opts, deadline);
      calls.toolCalls += (parsed.message.toolCalls?.length ?? 0) + (invalidCall ? 1 : 0);
      calls.invalidToolCalls += invalidCall ? 1 : 0;
      calls.failedToolCalls += (step.failedToolCalls ?? 0) + (invalidCall ? 1 : 0);
      turns.push({
        observation,
        observationTokens: prompt,
        action: parsed.message,
        actionTokens: seq.tokens,
        logprobs: seq.logprobs ?? [],
        reward: step.reward,
        ...(step.rewards ? { rewardParts: step.rewards } : {}),
        nextState: step.messages,
        stopReason: parsed.ok ? "stop" : "length",
        samplerVersion: opts.samplerVersion ?? 0,
      });
      if (invalidCall && opts.toolUse?.endOnInvalidCall) {
        stopReason = "parse_error";
        break;
      }
      if (step.terminated) {
        stopReason = step.info.reason === "invalid_action" ? "parse_error" : "completed";
        break;
      }
      if (step.truncated) break;
      if (!parsed.ok) {
        stopReason = "max_tokens";
        break;
      }
      conversation.push(parsed.message, ...step.messages);
      prompt = renderer.continuation
        ? [...prompt, ...seq.tokens, ...closing, ...renderer.continuation(step.messages)]
        : promptTokens(renderer, conversation);
      observation = step.messages;
    }
  } catch (e) {
    stopReason = "error";
    const timedOut = e instanceof EpisodeTimeoutError;
    return finish({ error: (e as Error).message, ...(timedOut ? { timedOut } : {}) });
  } finally {
    // Releases the env's session; bounded by the episode's limits, a failure is not the episode's.
    await withinLimits(env.close?.(), opts, deadline).catch(() => {});
  }
  return finish();
}

/**
 * A prompt's tokens, from the renderer's one prompt function (`buildGenerationInput`). A turn
 * holds its prompt as tokens (the rollout store's format), so a prompt with an image chunk is
 * refused here in one line rather than trained as the text without its image.
 */
function promptTokens(renderer: Renderer, messages: Message[]): number[] {
  const input = renderer.buildGenerationInput(messages);
  if (input.some((c) => c.type !== "encoded_text")) {
    throw new Error(
      "an episode's prompt has an image: a turn holds its prompt as tokens, so rollouts take " +
        "text only (the proxy samples images)",
    );
  }
  return ModelInput.toInts({ chunks: input });
}

/** The step a rollout answers a tool call that does not parse with (the env is not called). */
function invalidCallStep(error: string, reward: number): MessageStepResult {
  return {
    messages: [{ role: "user", content: invalidToolCallMessage(error) }],
    reward,
    rewards: reward === 0 ? [] : [reward],
    terminated: false,
    truncated: false,
    info: { reason: "invalid_tool_call" },
  };
}

/**
 * Stops at the end of a tool call: the renderer's stop tokens plus `</tool_call>` (one token id
 * where the tokenizer has it as a token, as Qwen3's does; else every stop as a string), the
 * tokens that end a call, and the token that closes a message.
 */
function toolCallStop(
  renderer: Renderer,
): { stop: number[] | string[]; close: number[]; end: number[] } | null {
  const ends: (number | string)[] = renderer.stopSequences();
  if (ends.length === 0) return null;
  const close = renderer.tokenizer.encode("</tool_call>");
  const ids = ends.filter((e): e is number => typeof e === "number");
  const texts = stopTexts(renderer);
  const stop = close.length === 1 && ids.length === ends.length
    ? [...ids, close[0]]
    : [...texts, "</tool_call>"];
  // A format whose end is text (role_colon) closes the message with that text's tokens.
  const end = typeof ends[0] === "number" ? [ends[0]] : renderer.tokenizer.encode(ends[0]);
  return { stop, close, end };
}

function endsWith(xs: readonly number[], suffix: readonly number[]): boolean {
  if (suffix.length === 0 || suffix.length > xs.length) return false;
  const off = xs.length - suffix.length;
  return suffix.every((x, i) => xs[off + i] === x);
}

/**
 * Waits for a call (a sample, an environment step), but no longer than the episode's deadline
 * or its abort signal allow; a late result (or late failure) of the call is dropped.
 */
function withinLimits<T>(
  call: PromiseLike<T> | T,
  opts: RolloutOptions,
  deadline: number | undefined,
): Promise<T> {
  const { signal, timeoutMs } = opts;
  if (deadline === undefined && !signal) return Promise.resolve(call);
  return new Promise<T>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = () => {
      cleanup();
      reject(signal?.reason ?? new Error("episode aborted"));
    };
    const cleanup = () => {
      if (timer !== undefined) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    if (deadline !== undefined) {
      timer = setTimeout(() => {
        cleanup();
        reject(new EpisodeTimeoutError(timeoutMs!));
      }, Math.max(0, deadline - performance.now()));
    }
    Promise.resolve(call).then(
      (v) => {
        cleanup();
        resolve(v);
      },
      (e) => {
        cleanup();
        reject(e);
      },
    );
  });
}
