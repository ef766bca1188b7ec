/**
 * Rollouts: episodes of an environment played by a sampling client, token-in/token-out (the
 * sampled tokens are kept as sampled, never re-tokenized), and groups of episodes from one
 * start state for GRPO. Each turn's prompt extends the previous prompt and action, so a
 * multi-turn episode becomes one datum.
 *
 * @module
 */

import type { Env } from "../envs/types.ts";
import type { SamplingClient } from "../tinker/mod.ts";
import { ChatMLRenderer } from "../renderers/chatml.ts";
import type { TurnTokens } from "../datums/mod.ts";

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
}

/** Limits and sampling of a rollout. */
export interface RolloutOptions {
  maxTokensPerTurn: number;
  temperature?: number;
  /** Seeds the sampler; each turn uses seed + turn. */
  seed?: number;
  /** At most this many turns (default: the env's own limit). */
  maxTurns?: number;
  renderer?: ChatMLRenderer;
}

/**
 * Plays one episode from an env that was already reset (its first observation given), so a
 * group's spawned copies all start from the same state.
 */
export async function runEpisode(
  env: Env,
  firstObservation: string,
  sampler: SamplingClient,
  opts: RolloutOptions,
): Promise<Episode> {
  const renderer = opts.renderer ?? new ChatMLRenderer();
  const turns: Turn[] = [];
  let prompt = renderer.generationPrompt([{ role: "user", content: firstObservation }]);
  let observation = firstObservation;
  let stopReason: EpisodeStopReason = "max_turns";
  try {
    const maxTurns = opts.maxTurns ?? env.maxTurns;
    for (let t = 0; t < maxTurns; t++) {
      const res = await sampler.sample({
        prompt: { chunks: [{ type: "encoded_text", tokens: prompt }] },
        samplingParams: {
          maxTokens: opts.maxTokensPerTurn,
          temperature: opts.temperature ?? 1,
          seed: opts.seed === undefined ? undefined : opts.seed + t,
          stop: renderer.stopTokens(),
        },
      });
      const seq = res.sequences[0];
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
      prompt = [
        ...prompt,
        ...seq.tokens,
        ...renderer.continuation([{ role: "user", content: step.observation }]),
      ];
      observation = step.observation;
    }
  } catch (e) {
    stopReason = "error";
    return {
      envId: env.id,
      turns,
      totalReward: sum(turns),
      stopReason,
      error: (e as Error).message,
    };
  }
  return { envId: env.id, turns, totalReward: sum(turns), stopReason };
}

/**
 * A GRPO group: `groupSize` episodes from one reset (copies made with `spawn(true)`), played
 * concurrently; each episode samples with its own seed.
 */
export async function runGroup(
  makeEnv: () => Env,
  envSeed: number,
  groupSize: number,
  sampler: SamplingClient,
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
