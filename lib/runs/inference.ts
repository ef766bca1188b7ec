/**
 * Test inference (`POST /test/inference`): the policy answers prompts through its chat renderer,
 * and the selected environment's verifier scores each answer as the first move of an episode
 * reset with a seed. Without prompts, the environment's own first observations (from those same
 * seeds) are the prompts, so each answer is scored on the task it was asked.
 *
 * @module
 */

import { asMessageEnv } from "../envs/message_env.ts";
import { make } from "../envs/registry.ts";
import { getRenderer, type Message } from "../renderers/mod.ts";
import { type PolicySource, withPolicy } from "./policy.ts";

/** Options of {@link testInference}. */
export interface InferenceOptions {
  dataDir: string;
  environment: string;
  modelName: string;
  policy: PolicySource;
  /** The user messages; absent or empty: `count` observations of the environment. */
  prompts?: string[];
  count: number;
  maxTokens: number;
  temperature: number;
  /** Prompt i is scored on an episode reset with `seed + i`. */
  seed: number;
}

/** One answered prompt. */
export interface InferenceResult {
  prompt: string;
  response: string;
  /** The environment seed the answer was scored on. */
  env_seed: number;
  /** The answer followed the environment's action format (and was not cut off). */
  format_ok: boolean;
  reward: number;
  /** Why the verifier scored it so (the environment's `info.reason`), and its reply. */
  verifier: { reason: string | null; feedback: string; episode_over: boolean };
  /** The sampling ended at max_tokens, before the end of the message. */
  truncated: boolean;
}

/** Reasons the games give to an action they cannot parse. */
const FORMAT_ERROR_REASONS = new Set(["format_error", "invalid_action"]);

/** Samples an answer to every prompt and scores it with the environment's verifier. */
export async function testInference(o: InferenceOptions): Promise<InferenceResult[]> {
  const renderer = getRenderer(o.modelName);
  const n = o.prompts?.length ? o.prompts.length : o.count;
  const episodes = await Promise.all(Array.from({ length: n }, async (_, i) => {
    const env = asMessageEnv(make(o.environment));
    const { messages } = await env.reset(o.seed + i);
    const given = o.prompts?.length ? o.prompts[i] : undefined;
    const opening: Message[] = given === undefined ? messages : [{ role: "user", content: given }];
    return {
      env,
      prompt: given ?? messages.map((m) => m.content).join("\n\n"),
      // Tools are declared as the rollout declares them, so tool-using envs can be answered.
      tokens: renderer.buildGenerationPrompt(renderer.declareTools(opening, env.tools ?? [])),
    };
  }));
  return await withPolicy(
    o.dataDir,
    o.policy,
    (sampler) =>
      Promise.all(episodes.map(async ({ env, prompt, tokens }, i) => {
        const res = await sampler.sample({
          prompt: { chunks: [{ type: "encoded_text", tokens }] },
          samplingParams: {
            maxTokens: o.maxTokens,
            temperature: o.temperature,
            seed: o.seed + i,
            stop: renderer.stopSequences(),
          },
        });
        const parsed = renderer.parseResponse(res.sequences[0].tokens);
        const step = await env.step(parsed.message);
        const reason = typeof step.info.reason === "string" ? step.info.reason : null;
        return {
          prompt,
          response: parsed.message.content,
          env_seed: o.seed + i,
          format_ok: parsed.ok && !parsed.error && !FORMAT_ERROR_REASONS.has(reason ?? ""),
          reward: step.reward,
          verifier: {
            reason,
            feedback: step.messages.map((m) => m.content).join("\n"),
            episode_over: step.terminated || step.truncated,
          },
          truncated: !parsed.ok,
        };
      })),
  );
}
