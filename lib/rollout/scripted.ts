/**
 * A scripted policy: a {@link Sampler} whose replies come from a function of the prompt, for
 * tests, benchmarks and baselines (a policy whose moves are known). It honours the sample call
 * as a sampling server does: the reply is cut after the first stop (string or token id) and at
 * `maxTokens`, and every token gets a made-up log-prob. Prompts and sampling parameters are
 * recorded.
 *
 * @module
 */

import type { SampleResponse } from "../protocol/mod.ts";
import { ChatMLRenderer } from "../renderers/chatml.ts";
import type { SampleArgs } from "../tinker/mod.ts";
import { ModelInput } from "../tinker/types.ts";
import type { Sampler } from "./episode.ts";

/** A scripted sampler and what it was asked. */
export type ScriptedPolicy = Sampler & {
  prompts: string[];
  params: SampleArgs["samplingParams"][];
};

/**
 * A policy over the byte-level ChatML format of the local models: `reply(prompt, i)` is the
 * text of call i's completion (end it with `<|im_end|>`).
 *
 * @example
 * const policy = scriptedPolicy(() => toolCallText("guess", { number: 5 }) + "<|im_end|>");
 * const episode = await runEpisode(env, opening, policy, { maxTokensPerTurn: 64 });
 */
export function scriptedPolicy(reply: (prompt: string, i: number) => string): ScriptedPolicy {
  const tok = new ChatMLRenderer().tokenizer;
  const prompts: string[] = [];
  const params: SampleArgs["samplingParams"][] = [];
  return {
    prompts,
    params,
    sample(args) {
      const prompt = tok.decode(ModelInput.toInts(args.prompt as never));
      const stops = ([] as (string | number)[]).concat(args.samplingParams?.stop ?? [])
        .map((s) => (typeof s === "number" ? tok.decode([s]) : s));
      // Each sample of a call (a group's first turn asks for one per episode) is a call of its own.
      const sequences = Array.from({ length: args.numSamples ?? 1 }, () => {
        prompts.push(prompt);
        params.push(args.samplingParams);
        let text = reply(prompt, prompts.length - 1);
        let cut = text.length, stopped = false;
        for (const s of stops) {
          const at = text.indexOf(s);
          if (at >= 0 && at + s.length <= cut) [cut, stopped] = [at + s.length, true];
        }
        text = text.slice(0, cut);
        let tokens = tok.encode(text);
        const max = args.samplingParams?.maxTokens ?? Infinity;
        if (tokens.length > max) [tokens, stopped] = [tokens.slice(0, max), false];
        return {
          tokens,
          logprobs: tokens.map((_, i) => -0.1 - i / 1000),
          stop_reason: stopped ? "stop" : "length",
        };
      });
      return Promise.resolve({ sequences } as unknown as SampleResponse);
    },
  };
}

/** A `<tool_call>` block as Qwen's template writes it. */
export function toolCallText(name: string, args: unknown): string {
  return `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
}
