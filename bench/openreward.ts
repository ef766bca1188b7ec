/**
 * The Open Reward Standard's overhead: tool-calling episodes per second of the same environment
 * played in process (`tool:<Env>`), over ORS with the server in this process, and over ORS with
 * `deno task envs serve` in its own process, side by side. The policy is scripted (no model), so
 * what is measured is the environment's path: sessions (create_session, create, prompt, tools,
 * delete), tool calls as server-sent events, and the rollout around them. Two environments:
 * WhoDunIt (about 12 tool calls per episode: per-call cost) and the arithmetic task (one call:
 * per-session cost). Settings alternate within each round, so they share the machine's load.
 *
 * @module
 */

import { startServerProcess } from "../lib/http/mod.ts";
import { detective } from "../lib/envs/whodunit_detective.ts";
import { make } from "../lib/envs/registry.ts";
import { ToolTaskEnv } from "../lib/envs/tool_task_env.ts";
import type { AnyEnv } from "../lib/envs/types.ts";
import { OrsClient } from "../lib/openreward/client.ts";
import { startOrsServer } from "../lib/openreward/server.ts";
import { solveArithmetic } from "../lib/pretrain/players.ts";
import { listToolEnvironments } from "../lib/envs/registry.ts";
import { collectGroups } from "../lib/rollout/collect.ts";
import { scriptedPolicy, toolCallText } from "../lib/rollout/scripted.ts";
import { median } from "./local_engine.ts";

/** Sizes of the benchmark. */
export const ORS_BENCH: {
  envs: string[];
  groups: number;
  groupSize: number;
  concurrency: number[];
  rounds: number;
  maxTokensPerTurn: number;
} = {
  envs: ["tool:WhoDunIt-v0-easy", "tool:Arithmetic-v0-easy"],
  groups: 16,
  groupSize: 4,
  concurrency: [1, 16],
  rounds: 5,
  maxTokensPerTurn: 400,
};

const MODES = ["in_process", "ors_same_process", "ors_subprocess"] as const;
type Mode = typeof MODES[number];

/** One environment × concurrency: medians over rounds per mode. */
export interface OrsBenchRow {
  env: string;
  concurrency: number;
  tool_calls_per_episode: number;
  episodes_per_s: Record<Mode, number>;
  tool_calls_per_s: Record<Mode, number>;
  /** Episodes/s in process ÷ over ORS (how many times slower the protocol makes it). */
  slowdown: { ors_same_process: number; ors_subprocess: number };
  /**
   * Extra wall time per tool call over ORS, in ms: (1/rate over ORS − 1/rate in process) ÷ calls
   * per episode (with several episodes in flight, amortised wall time, not latency).
   */
  overhead_ms_per_call: { ors_same_process: number; ors_subprocess: number };
  all_episodes_per_s: Record<Mode, number[]>;
}

/** Arithmetic: the right answer, read from the user turn. */
function arithmetic(prompt: string): string {
  const question = prompt.match(/<\|im_start\|>user\n([^<]*)/)![1];
  return `${toolCallText("answer", { answer: solveArithmetic(question) })}<|im_end|>`;
}

/** Runs the benchmark; `log` reports progress. */
export async function benchOpenReward(log: (msg: string) => void) {
  const inProcess = await startOrsServer({ environments: Object.values(listToolEnvironments()) });
  const sub = await spawnServer();
  const clients = {
    ors_same_process: new OrsClient({ baseUrl: inProcess.url }),
    ors_subprocess: new OrsClient({ baseUrl: sub.url }),
  };
  const rows: OrsBenchRow[] = [];
  try {
    for (const id of ORS_BENCH.envs) {
      const name = listToolEnvironments()[id].name;
      const policy = id.includes("WhoDunIt") ? detective : arithmetic;
      const makeEnv = (mode: Mode): () => AnyEnv =>
        mode === "in_process"
          ? () => make(id)
          : () => new ToolTaskEnv(clients[mode].environment(name), { id, maxTurns: 24 });
      for (const concurrency of ORS_BENCH.concurrency) {
        let episodesPlayed = 0, callsMade = 0;
        const eps: Record<Mode, number[]> = {
          in_process: [],
          ors_same_process: [],
          ors_subprocess: [],
        };
        const calls: Record<Mode, number[]> = {
          in_process: [],
          ors_same_process: [],
          ors_subprocess: [],
        };
        for (let round = 0; round < ORS_BENCH.rounds; round++) {
          const order = round % 2 ? [...MODES].reverse() : MODES;
          for (const mode of order) {
            const t0 = performance.now();
            const res = await collectGroups(
              Array.from({ length: ORS_BENCH.groups }, (_, g) => ({
                makeEnv: makeEnv(mode),
                envSeed: 1000 * round + g,
              })),
              scriptedPolicy(policy),
              {
                groupSize: ORS_BENCH.groupSize,
                maxConcurrency: concurrency,
                maxTokensPerTurn: ORS_BENCH.maxTokensPerTurn,
              },
            );
            const s = (performance.now() - t0) / 1000;
            const episodes = res.groups.flatMap((g) => g.episodes);
            if (episodes.length !== ORS_BENCH.groups * ORS_BENCH.groupSize) {
              throw new Error(`${mode}: ${JSON.stringify(res.errors.slice(0, 2))}`);
            }
            if (episodes.some((e) => e.totalReward !== 1)) throw new Error(`${mode}: not solved`);
            eps[mode].push(episodes.length / s);
            episodesPlayed += episodes.length;
            callsMade += episodes.reduce((n, e) => n + (e.toolCalls ?? 0), 0);
            calls[mode].push(episodes.reduce((n, e) => n + (e.toolCalls ?? 0), 0) / s);
          }
          log(
            `${id} × ${concurrency} in flight, round ${round + 1}: ` +
              MODES.map((m) => `${m} ${eps[m].at(-1)!.toFixed(1)} ep/s`).join(", "),
          );
        }
        const med = (m: Mode) => median(eps[m]);
        // The same episodes in every mode (same seeds, same policy): one count for all.
        const perEpisode = callsMade / episodesPlayed;
        const overhead = (m: Mode) => ((1 / med(m) - 1 / med("in_process")) * 1000) / perEpisode;
        rows.push({
          env: id,
          concurrency,
          tool_calls_per_episode: perEpisode,
          episodes_per_s: {
            in_process: med("in_process"),
            ors_same_process: med("ors_same_process"),
            ors_subprocess: med("ors_subprocess"),
          },
          tool_calls_per_s: {
            in_process: median(calls.in_process),
            ors_same_process: median(calls.ors_same_process),
            ors_subprocess: median(calls.ors_subprocess),
          },
          slowdown: {
            ors_same_process: med("in_process") / med("ors_same_process"),
            ors_subprocess: med("in_process") / med("ors_subprocess"),
          },
          overhead_ms_per_call: {
            ors_same_process: overhead("ors_same_process"),
            ors_subprocess: overhead("ors_subprocess"),
          },
          all_episodes_per_s: eps,
        });
      }
    }
  } finally {
    await inProcess.close();
    await sub.close();
  }
  return {
    sizes: ORS_BENCH,
    policy: "scripted (WhoDunIt: the detective; arithmetic: the right answer); no model",
    machine: { cores: navigator.hardwareConcurrency, deno: Deno.version.deno },
    rows,
  };
}

/** `deno task envs serve` on a free port, in its own process, found through its ready file. */
async function spawnServer(): Promise<{ url: string; close(): Promise<void> }> {
  const child = await startServerProcess({
    script: new URL("../scripts/envs.ts", import.meta.url).pathname,
    args: ["serve", "--port", "0"],
  });
  return {
    url: child.listening,
    async close() {
      await child.stop("SIGTERM");
    },
  };
}
