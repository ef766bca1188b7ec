/**
 * Rollouts: episodes of an environment played by a sampling client, token-in/token-out (the
 * sampled tokens are kept as sampled, never re-tokenized), and groups of episodes from one
 * start state for GRPO. Each turn's prompt extends the previous prompt and action, so a
 * multi-turn episode becomes one datum.
 *
 * @module
 */

import type { Env } from "../envs/types.ts";
import type { SampleArgs } from "../tinker/mod.ts";
import type { SampleResponse } from "../protocol/mod.ts";
import { ChatMLRenderer } from "../renderers/chatml.ts";
import type { Message, Renderer } from "../renderers/types.ts";
import type { TurnTokens } from "../datums/mod.ts";

export {
  collectGroups,
  type CollectOptions,
  type CollectResult,
  type CollectTiming,
  type DroppedCounts,
  type EpisodeGroup,
  type FailurePolicy,
  type GroupSpec,
} from "./collect.ts";

/**
 * What a rollout needs of a sampler: a `SamplingClient`, or a wrapper around one (to count or
 * delay calls) without subclassing it.
 */
export interface Sampler {
  sample(args: SampleArgs): PromiseLike<SampleResponse>;
}

/** Why an episode ended. */
export type EpisodeStopReason = "completed" | "max_turns" | "max_tokens" | "parse_error" | "error";

/** One turn: the prompt tokens, the sampled action with its log-probs, and the env's reward. */
export interface Turn {
  observationTokens: number[];
  actionTokens: number[];
  logprobs: number[];
  /** The text given to the environment: the decoded action without the end-of-message token. */
  actionText: string;
  reward: number;
  /** The user message this turn answered (the env's observation). */
  observation: string;
  /** What the env said after the action: the turn's next state (OPD hints, PRM evidence). */
  nextObservation: string;
}

/** A finished episode. */
export interface Episode {
  envId: string;
  turns: Turn[];
  totalReward: number;
  stopReason: EpisodeStopReason;
  error?: string;
  /** Set when the episode ended because it ran past `timeoutMs` (stop reason "error"). */
  timedOut?: boolean;
  /** Action tokens sampled over the episode (what `maxTokensPerEpisode` limits). */
  sampledTokens?: number;
  /** Wall time of the episode. */
  durationMs?: number;
  /** The sampler seed of the episode's first turn (turn t samples with seed + t). */
  seed?: number;
  /** Attempts it took under the "retry" failure policy of `collectGroups` (1 = first try). */
  attempts?: number;
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
}

/** Raised inside an episode that ran past its `timeoutMs`. */
export class EpisodeTimeoutError extends Error {
  override name = "EpisodeTimeoutError";
  constructor(readonly timeoutMs: number) {
    super(`episode timed out after ${timeoutMs} ms`);
  }
}

/**
 * Plays one episode from an env that was already reset (its first observation given), so a
 * group's spawned copies all start from the same state.
 */
export async function runEpisode(
  env: Env,
  firstObservation: string,
  sampler: Sampler,
  opts: RolloutOptions,
): Promise<Episode> {
  const started = performance.now();
  const deadline = opts.timeoutMs === undefined ? undefined : started + opts.timeoutMs;
  const turns: Turn[] = [];
  let sampledTokens = 0;
  let stopReason: EpisodeStopReason = "max_turns";
  const finish = (extra: Partial<Episode> = {}): Episode => ({
    envId: env.id,
    turns,
    totalReward: sum(turns),
    stopReason,
    ...extra,
    sampledTokens,
    durationMs: performance.now() - started,
    ...(opts.seed === undefined ? {} : { seed: opts.seed }),
  });
  try {
    const renderer = opts.renderer ?? new ChatMLRenderer();
    const conversation: Message[] = [{ role: "user", content: firstObservation }];
    let prompt = renderer.buildGenerationPrompt(conversation);
    let observation = firstObservation;
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
      const step = env.step(parsed.message.content);
      turns.push({
        observationTokens: prompt,
        actionTokens: seq.tokens,
        logprobs: seq.logprobs ?? [],
        actionText: parsed.message.content,
        reward: step.reward,
        observation,
        nextObservation: step.observation,
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
      const next: Message = { role: "user", content: step.observation };
      conversation.push(parsed.message, next);
      prompt = renderer.continuation
        ? [...prompt, ...seq.tokens, ...renderer.continuation([next])]
        : renderer.buildGenerationPrompt(conversation);
      observation = step.observation;
    }
  } catch (e) {
    stopReason = "error";
    const timedOut = e instanceof EpisodeTimeoutError;
    return finish({ error: (e as Error).message, ...(timedOut ? { timedOut } : {}) });
  }
  return finish();
}

/**
 * Waits for a sample call, but no longer than the episode's deadline or its abort signal allow;
 * a late result (or late failure) of the call is dropped.
 */
function withinLimits<T>(
  call: PromiseLike<T>,
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

/**
 * A GRPO group: `groupSize` episodes from one reset (copies made with `spawn(true)`), played
 * concurrently; each episode samples with its own seed.
 */
export async function runGroup(
  makeEnv: () => Env,
  envSeed: number,
  groupSize: number,
  sampler: Sampler,
  opts: RolloutOptions,
): Promise<Episode[]> {
  const parent = makeEnv();
  const { observation } = parent.reset(envSeed);
  return await Promise.all(
    Array.from(
      { length: groupSize },
      (_, i) =>
        runEpisode(parent.spawn(true), observation, sampler, {
          ...opts,
          seed: opts.seed === undefined ? undefined : opts.seed + 1000 * i,
        }),
    ),
  );
}

/** An episode's turns for the datum builder, with one advantage for the whole episode. */
export function episodeTurnTokens(episode: Episode, advantage: number): TurnTokens[] {
  return episode.turns.map((t) => ({
    observation: t.observationTokens,
    action: t.actionTokens,
    logprobs: t.logprobs,
    advantage,
  }));
}

function sum(turns: Turn[]): number {
  return turns.reduce((a, t) => a + t.reward, 0);
}
