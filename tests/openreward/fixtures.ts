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

export { scriptedPolicy, toolCallText } from "../../lib/rollout/scripted.ts";
