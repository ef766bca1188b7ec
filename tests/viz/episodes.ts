/**
 * Episodes for the viz tests, played by a script instead of a sampler: real env steps and the
 * ChatML renderer's real tokens, with a fixed log-prob per action token.
 */

import { makeBuiltin } from "../../lib/envs/mod.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import type { Episode, Turn } from "../../lib/rl/types.ts";
import type { Message } from "../../lib/renderers/types.ts";

export const renderer = new ChatMLRenderer();

/** Plays `actions` on GuessTheNumber-easy from `seed`; each action token gets log-prob `lp`. */
export function scriptedEpisode(seed: number, actions: string[], lp = -0.5): Episode {
  const env = makeBuiltin("game:GuessTheNumber-v0-easy");
  let observation: Message[] = [{ role: "user", content: env.reset(seed).observation }];
  let prompt = renderer.generationPrompt(observation);
  const turns: Turn[] = [];
  let stopReason: Episode["stopReason"] = "max_turns";
  for (const action of actions) {
    const actionTokens = renderer.tokenizer.encode(`${action}<|im_end|>`);
    const step = env.step(action);
    const nextState: Message[] = [{ role: "user", content: step.observation }];
    turns.push({
      observation,
      observationTokens: prompt,
      action: { role: "assistant", content: action },
      actionTokens,
      logprobs: actionTokens.map(() => lp),
      reward: step.reward,
      nextState,
      stopReason: "stop",
      samplerVersion: 0,
    });
    if (step.terminated || step.truncated) {
      stopReason = step.info.reason === "invalid_action" ? "parse_error" : "completed";
      break;
    }
    prompt = [...prompt, ...actionTokens, ...renderer.continuation(nextState)];
    observation = nextState;
  }
  return {
    envId: env.id,
    turns,
    totalReward: turns.reduce((a, t) => a + t.reward, 0),
    stopReason,
  };
}
