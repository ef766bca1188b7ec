/**
 * Rollout throughput: episodes per second of `collectGroups` on GuessTheNumber (easy) against
 * in-process local backends, at 1 and 32 episodes in flight, with the sampler's prefix cache
 * off and on (two backends in one process, so they share the one wasm thread and the
 * machine's load). Every setting plays the same episodes (same env seeds and sampler seeds),
 * alternating the order between rounds, so the ratios are measured under the same load.
 *
 * @module
 */

import { startLocalServer } from "../lib/local/server/mod.ts";
import { findLocalModel } from "../lib/local/models.ts";
import { type SamplingClient, ServiceClient } from "../lib/tinker/mod.ts";
import { collectGroups, type CollectResult } from "../lib/rollout/mod.ts";
import { make } from "../lib/envs/mod.ts";
import { median } from "./local_engine.ts";

/** Sizes of the rollout benchmark. */
export const ROLLOUT_BENCH = {
  env: "game:GuessTheNumber-v0-easy",
  groups: 8,
  groupSize: 8,
  maxTokensPerTurn: 40,
  concurrency: [1, 32],
  rounds: 2,
  seed: 17,
} as const;

/** One setting's figures (medians over rounds). */
export interface RolloutLevel {
  concurrency: number;
  prefix_cache: boolean;
  episodes_per_s: number;
  sampled_tokens_per_s: number;
  /** Episodes/s ÷ episodes/s at concurrency 1 without the prefix cache. */
  ratio_vs_1: number;
  /** Episodes/s with the prefix cache ÷ without it, at this concurrency (1 when off). */
  ratio_vs_no_cache: number;
  all_episodes_per_s: number[];
}

/** Runs the benchmark on its own local servers; `log` gets progress lines. */
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
  // The size the backend's option documents as measured.
  const cacheOn = 192 * 2 ** 20;
  const backends = await Promise.all([0, cacheOn].map(async (prefixCacheBytes) => {
    const dataDir = await Deno.makeTempDir({ prefix: "tb-bench-rollout-" });
    const server = await startLocalServer({ dataDir, prefixCacheBytes });
    const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
    const sampler = await service.createSamplingClient({ baseModel: model });
    return { prefixCache: prefixCacheBytes !== 0, dataDir, server, service, sampler };
  }));
  try {
    const B = ROLLOUT_BENCH;
    const specs = Array.from({ length: B.groups }, (_, g) => ({
      makeEnv: () => make(B.env),
      envSeed: 1000 + g,
    }));
    const collect = (sampler: SamplingClient, concurrency: number, n = specs.length) =>
      collectGroups(specs.slice(0, n), sampler, {
        groupSize: B.groupSize,
        maxConcurrency: concurrency,
        maxTokensPerTurn: B.maxTokensPerTurn,
        seed: B.seed,
      });
    log(`rollout: ${model} (${weights}); warm-up`);
    for (const b of backends) await collect(b.sampler, 8, 1);
    const settings = B.concurrency.flatMap((c) =>
      backends.map((b) => ({ concurrency: c, backend: b, key: `${c}:${b.prefixCache}` }))
    );
    const perLevel = new Map(
      settings.map((
        s,
      ) => [s.key, { eps: [] as number[], toks: [] as number[], prints: [] as string[] }]),
    );
    let last: CollectResult | undefined;
    for (let round = 1; round <= B.rounds; round++) {
      const order = round % 2 ? [...settings] : [...settings].reverse();
      for (const { concurrency, backend, key } of order) {
        const res = await collect(backend.sampler, concurrency);
        const eps = res.groups.flatMap((g) => g.episodes);
        const tokens = eps.reduce((a, e) => a + (e.sampledTokens ?? 0), 0);
        const m = perLevel.get(key)!;
        m.eps.push(res.timing.episodesPerSecond);
        m.toks.push(tokens / (res.timing.wallMs / 1000));
        m.prints.push(JSON.stringify(eps.map((e) => e.turns.map((t) => t.actionTokens))));
        log(
          `  round ${round}, concurrency ${concurrency}, prefix cache ${
            backend.prefixCache ? "on" : "off"
          }: ${eps.length} episodes in ${(res.timing.wallMs / 1000).toFixed(1)} s = ${
            res.timing.episodesPerSecond.toFixed(2)
          } episodes/s`,
        );
        last = res;
      }
    }
    const rate = (c: number, cache: boolean) => median(perLevel.get(`${c}:${cache}`)!.eps);
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
      levels: settings.map(({ concurrency, backend, key }) => {
        const m = perLevel.get(key)!;
        return {
          concurrency,
          prefix_cache: backend.prefixCache,
          episodes_per_s: median(m.eps),
          sampled_tokens_per_s: median(m.toks),
          ratio_vs_1: median(m.eps) / rate(1, false),
          ratio_vs_no_cache: median(m.eps) / rate(concurrency, false),
          all_episodes_per_s: m.eps,
        };
      }),
    };
  } finally {
    for (const b of backends) {
      b.service.close();
      await b.server.close();
      await Deno.remove(b.dataDir, { recursive: true });
    }
  }
}
