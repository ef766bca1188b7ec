/**
 * A probe environment for ORS tests: tools that echo (big outputs are chunked), wait (pings),
 * throw, report the secrets a session was opened with, and finish with a reward.
 */

import { z } from "zod";
import {
  defineTool,
  seededTasks,
  textBlock,
  textOutput,
  type ToolEnvironment,
  toolSession,
} from "../../lib/envs/tool_env.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import type { Sampler } from "../../lib/rollout/episode.ts";
import type { SampleArgs } from "../../lib/tinker/mod.ts";
import { ModelInput } from "../../lib/tinker/types.ts";
import type { SampleResponse } from "../../lib/protocol/mod.ts";

interface Probe {
  task: Record<string, unknown>;
  secrets: Record<string, string>;
}

const TOOLS = [
  defineTool(
    "echo",
    "Repeat a text.",
    z.object({ text: z.string() }),
    (_p: Probe, { text }) => textOutput(text),
  ),
  defineTool(
    "slow",
    "Answer after a delay.",
    z.object({ ms: z.number().int().min(0).max(5000) }),
    async (_p: Probe, { ms }) => {
      await new Promise((r) => setTimeout(r, ms));
      return textOutput("done");
    },
  ),
  defineTool("boom", "Throw.", z.object({}), () => {
    throw new Error("kaboom");
  }),
  defineTool(
    "secrets",
    "Show the session's secrets.",
    z.object({}),
    (p: Probe) => textOutput(JSON.stringify(p.secrets)),
  ),
  defineTool(
    "finish",
    "End with a reward.",
    z.object({ reward: z.number() }),
    (_p: Probe, { reward }) => textOutput("bye", { reward, finished: true, metadata: { n: 1 } }),
  ),
];

/** Tool calls the probe's sessions ran, by tool name (counts each call once). */
export const probeCalls: Record<string, number> = {};

/** The probe environment: splits train (5 tasks) and test (2). */
export function probeEnvironment(): ToolEnvironment {
  return {
    name: "probe",
    description: "Test tools",
    ...seededTasks({ train: 5, test: 2 }, 1),
    tools: TOOLS.map((t) => t.spec),
    open: (task, secrets) => {
      const p: Probe = { task, secrets };
      const counted = TOOLS.map((t) => {
        const b = t.bind(p);
        return {
          spec: b.spec,
          run: (input: unknown) => {
            probeCalls[b.spec.name] = (probeCalls[b.spec.name] ?? 0) + 1;
            return b.run(input);
          },
        };
      });
      return toolSession([textBlock(`Task ${task.split}/${task.index}.`)], counted);
    },
  };
}

/** The error a call rejects with, checked to be of a class and, optionally, to contain a text. */
export async function rejection<E extends Error>(
  fn: () => Promise<unknown>,
  // deno-lint-ignore no-explicit-any
  cls: new (...args: any[]) => E,
  includes?: string,
): Promise<E> {
  try {
    await fn();
  } catch (e) {
    if (!(e instanceof cls)) throw new Error(`expected ${cls.name}, got ${e}`);
    if (includes && !e.message.includes(includes)) {
      throw new Error(`expected ${JSON.stringify(includes)} in: ${e.message}`);
    }
    return e;
  }
  throw new Error(`expected a ${cls.name}, but the call succeeded`);
}

/**
 * A policy that plays a script: `reply(prompt, i)` gives the text it would write, and the
 * sampler cuts it at the first stop of the call (included), as a sampling server does, so the
 * rollout's stops are exercised. Records every call's prompt and sampling parameters.
 */
export function scriptedPolicy(
  reply: (prompt: string, i: number) => string,
): Sampler & { prompts: string[]; params: SampleArgs["samplingParams"][] } {
  const renderer = new ChatMLRenderer();
  const tok = renderer.tokenizer;
  const prompts: string[] = [];
  const params: SampleArgs["samplingParams"][] = [];
  return {
    prompts,
    params,
    sample(args) {
      const prompt = tok.decode(ModelInput.toInts(args.prompt as never));
      prompts.push(prompt);
      params.push(args.samplingParams);
      const stops = ([] as (string | number)[]).concat(args.samplingParams?.stop ?? [])
        .map((s) => (typeof s === "number" ? tok.decode([s]) : s));
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
      return Promise.resolve({
        sequences: [{
          tokens,
          logprobs: tokens.map((_, i) => -0.1 - i / 1000),
          stop_reason: stopped ? "stop" : "length",
        }],
      } as unknown as SampleResponse);
    },
  };
}

/** A `<tool_call>` block as Qwen's template writes it. */
export function toolCallText(name: string, args: unknown): string {
  return `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
}
