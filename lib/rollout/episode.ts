/**
 * One episode of an environment played by a sampler, token-in/token-out: the sampled tokens are
 * kept as sampled, never re-tokenized. Each turn renders the conversation (tools declared in the
 * system message), samples the action, parses it (content, thinking, tool calls) and gives it to
 * the environment, whose messages become the next turn's observation.
 *
 * @module
 */

import { asMessageEnv } from "../envs/message_env.ts";
import type { AnyEnv, MessageEnv } from "../envs/types.ts";
import type { SampleResponse } from "../protocol/mod.ts";
import { ChatMLRenderer } from "../renderers/chatml.ts";
import { withTools } from "../renderers/tools.ts";
import type { Message, Renderer } from "../renderers/types.ts";
import type { Episode, EpisodeStopReason, Turn } from "../rl/types.ts";
import type { SampleArgs } from "../tinker/mod.ts";

/**
 * What a rollout needs of a sampler: a `SamplingClient`, or a wrapper around one (to count or
 * delay calls) without subclassing it.
 */
export interface Sampler {
  sample(args: SampleArgs): PromiseLike<SampleResponse>;
}

/** Limits and sampling of a rollout. */
export interface RolloutOptions {
  maxTokensPerTurn: number;
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
}

/** Raised inside an episode that ran past its `timeoutMs`. */
export class EpisodeTimeoutError extends Error {
  override name = "EpisodeTimeoutError";
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
  const finish = (extra: Partial<Episode> = {}): Episode => ({
    envId: env.id,
    turns,
    totalReward: turns.reduce((a, t) => a + t.reward, 0),
    stopReason,
    ...extra,
    sampledTokens,
    durationMs: performance.now() - started,
    ...(opts.seed === undefined ? {} : { seed: opts.seed }),
  });
  try {
    const renderer = opts.renderer ?? new ChatMLRenderer();
    // A copy: the opening is shared by every episode of a group.
    const conversation: Message[] = [...withTools(opening, env.tools ?? [])];
    let observation: Message[] = [...conversation];
    let prompt = renderer.buildGenerationPrompt(conversation);
    const maxTurns = opts.maxTurns ?? env.maxTurns;
    for (let t = 0; t < maxTurns; t++) {
      opts.signal?.throwIfAborted();
      if (deadline !== undefined && performance.now() >= deadline) {
        throw new EpisodeTimeoutError(opts.timeoutMs!);
      }
      const budget = opts.maxTokensPerEpisode === undefined
        ? Infinity
        : opts.maxTokensPerEpisode - sampledTokens;
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
            seed: opts.seed === undefined ? undefined : opts.seed + t,
            stop: renderer.stopSequences(),
          },
        }),
        opts,
        deadline,
      );
      const seq = res.sequences[0];
      sampledTokens += seq.tokens.length;
      const parsed = renderer.parseResponse(seq.tokens);
      const step = await withinLimits(env.step(parsed.message), opts, deadline);
      turns.push({
        observation,
        observationTokens: prompt,
        action: parsed.message,
        actionTokens: seq.tokens,
        logprobs: seq.logprobs ?? [],
        reward: step.reward,
        nextState: step.messages,
        stopReason: parsed.ok ? "stop" : "length",
        samplerVersion: opts.samplerVersion ?? 0,
      });
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
        ? [...prompt, ...seq.tokens, ...renderer.continuation(step.messages)]
        : renderer.buildGenerationPrompt(conversation);
      observation = step.messages;
    }
  } catch (e) {
    stopReason = "error";
    const timedOut = e instanceof EpisodeTimeoutError;
    return finish({ error: (e as Error).message, ...(timedOut ? { timedOut } : {}) });
  }
  return finish();
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
