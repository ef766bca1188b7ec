/**
 * Pretraining transcripts of the tool environments: an episode played by its format player
 * (`tool_players.ts`) and written as the conversation a rollout renders, the tools declared in
 * the system message in Qwen3's format (`declareTools`), each move an assistant message with its
 * `<tool_call>`, each answer a `tool` message (one `<tool_response>` user turn in ChatML).
 *
 * @module
 */

import { make } from "../envs/registry.ts";
import { isMessageEnv, type MessageEnv } from "../envs/types.ts";
import { ChatMLRenderer } from "../renderers/chatml.ts";
import { parseAssistantText } from "../renderers/parse.ts";
import type { Message } from "../renderers/types.ts";
import type { Tokenizer } from "../tokenizers/types.ts";
import { invalidToolCallMessage } from "../rollout/episode.ts";
import type { Rng } from "../util/random.ts";
import { drawMistake, mistakeOf } from "./tool_mistakes.ts";
import { toolPlayer } from "./tool_players.ts";
import type { Transcript, TranscriptOptions } from "./transcript.ts";
import { UNSEEN_TOOLS_ID, UnseenToolsEnv } from "./unseen_tools.ts";
import { FRESH_TOOLS_ID, freshToolsEnv } from "./fresh_tools.ts";

/** Whether an env id is played by {@link playToolTranscript} (a message environment). */
export function isToolEnvId(envId: string): boolean {
  return envId.startsWith("tool:") || envId === UNSEEN_TOOLS_ID || envId === FRESH_TOOLS_ID;
}

/** A fresh message environment of a tool env id (the registry's, or the unseen tools). */
export function makeToolEnv(envId: string): MessageEnv {
  if (envId === UNSEEN_TOOLS_ID) return new UnseenToolsEnv();
  if (envId === FRESH_TOOLS_ID) return freshToolsEnv();
  const env = make(envId);
  if (!isMessageEnv(env)) throw new Error(`${envId} is not a tool environment`);
  return env;
}

/**
 * Plays one episode of a tool environment from `envSeed` with its format player and keeps the
 * longest prefix of whole turns that fits `maxTokens` (as `playTranscript` does for text games).
 * Train-split tasks are indexed by seed, so seeds above the split's size wrap around.
 *
 * With `mistakeShare` > 0, each turn is a mistake with that chance (`tool_mistakes.ts`; a
 * GuessTheNumber move repeated, or a move written malformed or without its call), answered as a
 * rollout answers it, listed in the transcript's `mistakes` and not trained on; the player's move
 * follows. Turns count against the environment's limit as a rollout's do, mistakes included.
 */
export async function playToolTranscript(
  envId: string,
  envSeed: number,
  rng: Rng,
  { maxTokens = 1025, renderer = new ChatMLRenderer(), bisectShare, mistakeShare = 0 }:
    TranscriptOptions = {},
): Promise<Transcript> {
  const env = makeToolEnv(envId);
  const r: ChatMLRenderer<Tokenizer> = renderer;
  try {
    const reset = await env.reset(envSeed);
    const player = toolPlayer(envId, env, { bisectShare });
    const messages: Message[] = r.declareTools(reset.messages, env.tools ?? []);
    const mistakes: number[] = [];
    let observation = reset.messages;
    const reasons: string[] = [], rewards: number[] = [];
    let finished = false;
    // The player's next move once drawn: mistakes made of it come before it.
    let move: Message | null = null;
    for (let t = 0; t < env.maxTurns; t++) {
      const slip = mistakeShare > 0 && rng.uniform() < mistakeShare;
      let action: Message, mistake = false;
      const repeated = slip && move === null && rng.uniform() < 0.5
        ? player.repeat?.(observation) ?? null
        : null;
      if (repeated) [action, mistake] = [repeated, true];
      else {
        move ??= player.act(observation, rng);
        if (slip) [action, mistake] = [mistakeOf(move, drawMistake(rng)), true];
        else [action, move] = [move, null];
      }
      if (r.buildSupervisedExample([...messages, action]).tokens.length > maxTokens) break;
      const parsed = parseAssistantText(action.content, true);
      // A call that does not parse never reaches the environment (as in `runEpisode`).
      const step = mistake && parsed.error !== undefined
        ? null
        : await env.step(repeated || !mistake ? action : parsed.message);
      if (mistake) mistakes.push(messages.length);
      messages.push(action);
      if (step === null) {
        observation = [{ role: "user", content: invalidToolCallMessage(parsed.error!) }];
        messages.push(...observation);
        continue;
      }
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
    // The transcript ends with a trained move: answers after it, and mistakes with nothing
    // trained after them, teach nothing.
    const lastMistake = () => mistakes.at(-1) === messages.length - 1;
    let endedOnMistake = false;
    while (messages.length && (messages.at(-1)!.role !== "assistant" || lastMistake())) {
      if (lastMistake()) {
        endedOnMistake = true;
        mistakes.pop();
      }
      messages.pop();
    }
    const trained = messages.some((m) => m.role === "assistant");
    if (!trained && endedOnMistake) {
      // The environment ended on a mistake before any move (the unseen tools end at a turn
      // without the asked call): the episode again without mistakes, so it trains something.
      return await playToolTranscript(envId, envSeed, rng, {
        maxTokens,
        renderer,
        bisectShare,
        mistakeShare: 0,
      });
    }
    if (!trained) {
      throw new Error(
        `${envId} (seed ${envSeed}): the first turn alone exceeds ${maxTokens} tokens`,
      );
    }
    return {
      envId,
      envSeed,
      messages,
      reasons,
      rewards,
      finished,
      ...(mistakes.length ? { mistakes } : {}),
    };
  } finally {
    await env.close?.();
  }
}
