/**
 * Hand-made RL records for tests: one-turn episodes in the ChatML renderer's real token layout,
 * with made-up sampler log-probs, and groups of them.
 */

import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import type { Episode, EpisodeGroup, Turn } from "../../lib/rl/types.ts";
import type { MethodSettings } from "../../lib/scoring/compose.ts";

export const renderer = new ChatMLRenderer();
const enc = (s: string) => renderer.tokenizer.encode(s);

/** A turn answering "Guess." with `action`, its reward and next state (a user message). */
export function turn(action: string, reward: number, nextState: string, lps?: number[]): Turn {
  const actionTokens = enc(`${action}<|im_end|>`);
  return {
    observation: [{ role: "user", content: "Guess." }],
    observationTokens: renderer.generationPrompt([{ role: "user", content: "Guess." }]),
    action: { role: "assistant", content: action },
    actionTokens,
    logprobs: lps ?? actionTokens.map((_, i) => -1 - i / 10),
    reward,
    nextState: nextState ? [{ role: "user", content: nextState }] : [],
    stopReason: "stop",
    samplerVersion: 0,
  };
}

/** A one-turn episode. */
export function episode(action: string, reward: number, nextState: string): Episode {
  return {
    envId: "test",
    totalReward: reward,
    stopReason: "completed",
    turns: [turn(action, reward, nextState)],
  };
}

/** A group of episodes. */
export function group(id: string, episodes: Episode[]): EpisodeGroup {
  return { id, envId: "test", envSeed: 0, tags: [], episodes };
}

/** `rl` on environment rewards with group-centred advantages, no KL: tests override fields. */
export const RL_SETTINGS: MethodSettings = {
  method: "rl",
  rewardSource: "env",
  hintSource: "next_state",
  evalMode: false,
  advantages: {},
  wOpd: 1,
  wRl: 1,
  klCoef: 0,
};
