/**
 * Rollout throughput: episodes per second of `collectGroups` on GuessTheNumber (easy) against
 * the in-process local backend, at 1, 8 and 32 episodes in flight. Every level plays the same
 * episodes (same env seeds and sampler seeds), alternating the order between rounds, so the
 * ratios to concurrency 1 are measured under the same machine load.
 *
 * @module
 */

import { startLocalServer } from "../lib/local/server/mod.ts";
import { findLocalModel } from "../lib/local/models.ts";
import { ServiceClient } from "../lib/tinker/mod.ts";
import { collectGroups, type CollectResult } from "../lib/rollout/mod.ts";
import { make } from "../lib/envs/mod.ts";
import { median } from "./local_engine.ts";

/** Sizes of the rollout benchmark. */
export const ROLLOUT_BENCH = {
  env: "game:GuessTheNumber-v0-easy",
  groups: 8,
  groupSize: 8,
  maxTokensPerTurn: 32,
  concurrency: [1, 8, 32],
  rounds: 2,
  seed: 17,
} as const;

/** One concurrency level's figures (medians over rounds). */
export interface RolloutLevel {
  concurrency: number;
  episodes_per_s: number;
  sampled_tokens_per_s: number;
  /** Episodes/s at this level ÷ episodes/s at concurrency 1. */
  ratio_vs_1: number;
  all_episodes_per_s: number[];
}

/** Runs the benchmark on its own local server; `log` gets progress lines. */
export async function benchRollout(log: (msg: string) => void): Promise<{
  model: string;
  weights: string;
  sizes: typeof ROLLOUT_BENCH;
  episodes: number;
  same_episodes_at_every_level: boolean;
  stop_reasons: Record<string, number>;
  levels: RolloutLevel[];
}> {
  const model = findLocalModel("local/games") ? "local/games" : "local/tiny";
  const weightsFile = new URL(`../models/${model.replace("/", "_")}.safetensors`, import.meta.url);
  const weights = await Deno.stat(weightsFile).then(() => "trained", () => "random init");
  const dataDir = await Deno.makeTempDir({ prefix: "tb-bench-rollout-" });
  const server = await startLocalServer({ dataDir });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  try {
    const sampler = await service.createSamplingClient({ baseModel: model });
    const B = ROLLOUT_BENCH;
    const specs = Array.from({ length: B.groups }, (_, g) => ({
      makeEnv: () => make(B.env),
      envSeed: 1000 + g,
    }));
    const collect = (concurrency: number, n = specs.length) =>
      collectGroups(specs.slice(0, n), sampler, {
        groupSize: B.groupSize,
        maxConcurrency: concurrency,
        maxTokensPerTurn: B.maxTokensPerTurn,
        seed: B.seed,
      });
    log(`rollout: ${model} (${weights}); warm-up`);
    await collect(8, 1);
    const perLevel = new Map<number, { eps: number[]; toks: number[]; prints: string[] }>(
      B.concurrency.map((c) => [c, { eps: [], toks: [], prints: [] }]),
    );
    let last: CollectResult | undefined;
    for (let round = 1; round <= B.rounds; round++) {
      const order = round % 2 ? [...B.concurrency] : [...B.concurrency].reverse();
      for (const c of order) {
        const res = await collect(c);
        const eps = res.groups.flatMap((g) => g.episodes);
        const tokens = eps.reduce((a, e) => a + (e.sampledTokens ?? 0), 0);
        const m = perLevel.get(c)!;
        m.eps.push(res.timing.episodesPerSecond);
        m.toks.push(tokens / (res.timing.wallMs / 1000));
        m.prints.push(JSON.stringify(eps.map((e) => e.turns.map((t) => t.actionTokens))));
        log(
          `  round ${round}, concurrency ${c}: ${eps.length} episodes in ${
            (res.timing.wallMs / 1000).toFixed(1)
          } s = ${res.timing.episodesPerSecond.toFixed(2)} episodes/s`,
        );
        last = res;
      }
    }
    const base = median(perLevel.get(1)!.eps);
    const prints = new Set([...perLevel.values()].flatMap((m) => m.prints));
    const stopReasons: Record<string, number> = {};
    for (const e of last!.groups.flatMap((g) => g.episodes)) {
      stopReasons[e.stopReason] = (stopReasons[e.stopReason] ?? 0) + 1;
    }
    return {
      model,
      weights,
      sizes: B,
      episodes: B.groups * B.groupSize,
      same_episodes_at_every_level: prints.size === 1,
      stop_reasons: stopReasons,
      levels: B.concurrency.map((c) => {
        const m = perLevel.get(c)!;
        return {
          concurrency: c,
          episodes_per_s: median(m.eps),
          sampled_tokens_per_s: median(m.toks),
          ratio_vs_1: median(m.eps) / base,
          all_episodes_per_s: m.eps,
        };
      }),
    };
  } finally {
    service.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}
