/**
 * Pretraining transcripts of the tool environments: an episode played by its format player
 * (`tool_players.ts`) and written as the conversation a rollout renders, the tools declared in
 * the system message in Qwen3's format (`withTools`), each move an assistant message with its
 * `<tool_call>`, each answer a `tool` message (one `<tool_response>` user turn in ChatML).
 *
 * @module
 */

import { make } from "../envs/registry.ts";
import { isMessageEnv, type MessageEnv } from "../envs/types.ts";
import { ChatMLRenderer } from "../renderers/chatml.ts";
import { withTools } from "../renderers/tools.ts";
import type { Message } from "../renderers/types.ts";
import type { Tokenizer } from "../tokenizers/types.ts";
import type { Rng } from "../util/random.ts";
import { toolPlayer } from "./tool_players.ts";
import type { Transcript, TranscriptOptions } from "./transcript.ts";
import { UNSEEN_TOOLS_ID, UnseenToolsEnv } from "./unseen_tools.ts";

/** Whether an env id is played by {@link playToolTranscript} (a message environment). */
export function isToolEnvId(envId: string): boolean {
  return envId.startsWith("tool:") || envId === UNSEEN_TOOLS_ID;
}

/** A fresh message environment of a tool env id (the registry's, or the unseen tools). */
export function makeToolEnv(envId: string): MessageEnv {
  if (envId === UNSEEN_TOOLS_ID) return new UnseenToolsEnv();
  const env = make(envId);
  if (!isMessageEnv(env)) throw new Error(`${envId} is not a tool environment`);
  return env;
}

/**
 * Plays one episode of a tool environment from `envSeed` with its format player and keeps the
 * longest prefix of whole turns that fits `maxTokens` (as `playTranscript` does for text games).
 * Train-split tasks are indexed by seed, so seeds above the split's size wrap around.
 */
export async function playToolTranscript(
  envId: string,
  envSeed: number,
  rng: Rng,
  { maxTokens = 1025, renderer = new ChatMLRenderer(), bisectShare }: TranscriptOptions = {},
): Promise<Transcript> {
  const env = makeToolEnv(envId);
  const r: ChatMLRenderer<Tokenizer> = renderer;
  try {
    const reset = await env.reset(envSeed);
    const player = toolPlayer(envId, env, { bisectShare });
    const messages: Message[] = withTools(reset.messages, env.tools ?? []);
    let observation = reset.messages;
    const reasons: string[] = [], rewards: number[] = [];
    let finished = false;
    for (let t = 0; t < env.maxTurns; t++) {
      const action = player.act(observation, rng);
      if (r.buildSupervisedExample([...messages, action]).tokens.length > maxTokens) break;
      const step = await env.step(action);
      messages.push(action);
      reasons.push(String(step.info.reason));
      rewards.push(step.reward);
      if (step.terminated || step.truncated) {
        finished = true;
        break;
      }
      // The next move is judged with the answer in its prompt; an answer that alone overflows
      // ends the transcript at the move before it.
      messages.push(...step.messages);
      observation = step.messages;
    }
    while (messages.length && messages.at(-1)!.role !== "assistant") messages.pop();
    if (!messages.some((m) => m.role === "assistant")) {
      throw new Error(
        `${envId} (seed ${envSeed}): the first turn alone exceeds ${maxTokens} tokens`,
      );
    }
    return { envId, envSeed, messages, reasons, rewards, finished };
  } finally {
    await env.close?.();
  }
}
