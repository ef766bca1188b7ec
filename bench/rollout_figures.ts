/**
 * Figures of the rollout benchmark (`bench/rollout.ts`): medians over rounds, the ratios of
 * each arm (model, sampler engine, prefix cache) to the jax-js sampler's, the check that every
 * arm played the same episodes, and the figures committed before this run, carried over from
 * the results file.
 *
 * @module
 */

import { z } from "zod";
import type { CollectResult } from "../lib/rollout/mod.ts";
import type { SamplerEngine } from "../lib/local/sampler/mod.ts";
import { median } from "./local_engine.ts";

/** One way of serving the rollouts: a model, a sampler engine and a prefix cache size. */
export interface Arm {
  model: string;
  engine: SamplerEngine;
  prefixCacheMb: number;
}

/** One timed collection of the benchmark. */
export interface TimedRun extends Arm {
  concurrency: number;
  round: number;
  result: CollectResult;
  /** The prefix cache's counters after the run (null with the cache off). */
  cacheStats: { hits: number; misses: number; savedTokens: number } | null;
}

/** One arm's figures at one concurrency (medians over rounds). */
export interface RolloutLevel {
  model: string;
  engine: SamplerEngine;
  concurrency: number;
  prefix_cache: boolean;
  /** Episodes per run (fewer at 1 in flight: see the sizes). */
  episodes: number;
  episodes_per_s: number;
  sampled_tokens_per_s: number;
  /** Episodes/s ÷ the jax-js sampler's without the prefix cache, same concurrency. */
  ratio_vs_jax: number;
  /** Episodes/s ÷ the jax-js sampler's with the prefix cache, same concurrency. */
  ratio_vs_jax_cache_on: number;
  /** Episodes/s ÷ the same arm's at 1 in flight. */
  ratio_vs_1: number;
  /** Episodes/s ÷ the committed figure of the same model and cache setting (null if none). */
  ratio_vs_committed_before: number | null;
  /** Prefix-cache lookups that hit or missed and prompt tokens not run again, last round. */
  prefix_cache_stats: { hits: number; misses: number; savedTokens: number } | null;
  all_episodes_per_s: number[];
}

const CommittedLevelSchema = z.object({
  concurrency: z.number(),
  prefix_cache: z.boolean(),
  episodes_per_s: z.number(),
  sampled_tokens_per_s: z.number(),
});

const CommittedBeforeSchema = z.object({
  model: z.string(),
  engine: z.string(),
  date: z.string(),
  levels: z.array(CommittedLevelSchema),
});

/** The figures committed before this run (the jax-js sampler's). */
export type CommittedBefore = z.infer<typeof CommittedBeforeSchema>;

/**
 * The committed "before" figures of `model`: the file's own `committed_before` if this
 * benchmark wrote it, else that model's levels in the earlier file (all on the jax-js
 * sampler, the only engine then); null if neither.
 */
export async function readCommittedBefore(
  file: URL,
  model: string,
): Promise<CommittedBefore | null> {
  const text = await Deno.readTextFile(file).catch(() => null);
  if (text === null) return null;
  const json = JSON.parse(text);
  const kept = CommittedBeforeSchema.safeParse(json.committed_before);
  if (kept.success && kept.data.model === model) return kept.data;
  const levels = z.array(CommittedLevelSchema.extend({ model: z.string() })).safeParse(json.levels);
  if (!levels.success || typeof json.date !== "string") return null;
  const mine = levels.data.filter((l) => l.model === model);
  if (mine.length === 0) return null;
  return {
    model,
    engine: "jax",
    date: json.date,
    levels: mine.map(({ concurrency, prefix_cache, episodes_per_s, sampled_tokens_per_s }) => ({
      concurrency,
      prefix_cache,
      episodes_per_s,
      sampled_tokens_per_s,
    })),
  };
}

const armKey = (a: Arm) => `${a.model}|${a.engine}|${a.prefixCacheMb}`;

/** Levels, per-arm facts and the goal (≥ 2.5× at the top concurrency) from the runs. */
export function summarize(
  runs: TimedRun[],
  weights: Record<string, string>,
  committed: CommittedBefore | null,
) {
  const key = (a: Arm, c: number) => `${armKey(a)}|${c}`;
  const bySetting = Map.groupBy(runs, (r) => key(r, r.concurrency));
  const eps = (r: TimedRun) => r.result.timing.episodesPerSecond;
  const rate = (a: Arm, c: number) => {
    const rs = bySetting.get(key(a, c));
    return rs ? median(rs.map(eps)) : NaN;
  };
  const arms = [...new Map(runs.map((r) => [armKey(r), r])).values()];
  const jaxOf = (a: Arm, mb: number): Arm => ({ model: a.model, engine: "jax", prefixCacheMb: mb });
  const cacheMb = Math.max(...runs.map((r) => r.prefixCacheMb));
  const levels: RolloutLevel[] = [...bySetting.values()].map((rs) => {
    const a = rs[0], c = a.concurrency;
    const episodes = rs.map((r) => r.result.groups.flatMap((g) => g.episodes));
    const committedRate = committed?.model === a.model
      ? committed.levels.find((l) => l.concurrency === c && l.prefix_cache === a.prefixCacheMb > 0)
        ?.episodes_per_s
      : undefined;
    return {
      model: a.model,
      engine: a.engine,
      concurrency: c,
      prefix_cache: a.prefixCacheMb > 0,
      episodes: episodes[0].length,
      episodes_per_s: rate(a, c),
      sampled_tokens_per_s: median(
        rs.map((r, i) => sampledTokens(episodes[i]) / (r.result.timing.wallMs / 1000)),
      ),
      ratio_vs_jax: rate(a, c) / rate(jaxOf(a, 0), c),
      ratio_vs_jax_cache_on: rate(a, c) / rate(jaxOf(a, cacheMb), c),
      ratio_vs_1: rate(a, c) / rate(a, 1),
      ratio_vs_committed_before: committedRate ? rate(a, c) / committedRate : null,
      prefix_cache_stats: rs.at(-1)!.cacheStats,
      all_episodes_per_s: rs.map(eps),
    };
  }).sort((x, y) =>
    arms.findIndex((a) =>
        armKey(a) === armKey({ ...x, prefixCacheMb: x.prefix_cache ? cacheMb : 0 })
      ) -
      arms.findIndex((a) =>
        armKey(a) === armKey({ ...y, prefixCacheMb: y.prefix_cache ? cacheMb : 0 })
      ) ||
    x.concurrency - y.concurrency
  );
  const top = Math.max(...runs.map((r) => r.concurrency));
  const onnx = arms.find((a) => a.engine === "onnx" && a.prefixCacheMb === 0)!;
  const onnxCached = arms.find((a) => a.engine === "onnx" && a.prefixCacheMb > 0);
  return {
    arms: arms.map((a) =>
      describeArm(a, weights[a.model], runs.filter((r) => armKey(r) === armKey(a)))
    ),
    same_episodes_in_every_arm: samePlays(runs),
    levels,
    goal: {
      target_ratio: 2.5,
      concurrency: top,
      /** ONNX Runtime ÷ jax-js, both without the prefix cache (the default before). */
      vs_jax: rate(onnx, top) / rate(jaxOf(onnx, 0), top),
      /** ONNX Runtime ÷ jax-js with the prefix cache (the fastest before). */
      vs_jax_cache_on: rate(onnx, top) / rate(jaxOf(onnx, cacheMb), top),
      /** ONNX Runtime with its prefix cache ÷ jax-js with its own (null without that arm). */
      cached_vs_jax_cache_on: onnxCached
        ? rate(onnxCached, top) / rate(jaxOf(onnx, cacheMb), top)
        : null,
      /** ONNX Runtime with its prefix cache ÷ jax-js without (null without that arm). */
      cached_vs_jax: onnxCached ? rate(onnxCached, top) / rate(jaxOf(onnx, 0), top) : null,
      /** ONNX Runtime ÷ the committed jax-js figure without the cache. */
      vs_committed: (() => {
        const c = committed?.levels.find((l) => l.concurrency === top && !l.prefix_cache);
        return c ? rate(onnx, top) / c.episodes_per_s : null;
      })(),
    },
  };
}

/** Whether every run played the same action tokens for the same group and episode index. */
function samePlays(runs: TimedRun[]): boolean {
  const plays = new Map<string, Set<string>>();
  for (const r of runs) {
    for (const g of r.result.groups) {
      g.episodes.forEach((e, i) => {
        const id = `${r.model}:${g.id}:${i}`;
        if (!plays.has(id)) plays.set(id, new Set());
        plays.get(id)!.add(JSON.stringify(e.turns.map((t) => t.actionTokens)));
      });
    }
  }
  return [...plays.values()].every((s) => s.size === 1);
}

/** What one arm's episodes look like, from its first run at the highest concurrency. */
function describeArm(arm: Arm, weights: string, runs: TimedRun[]) {
  const top = Math.max(...runs.map((r) => r.concurrency));
  const ref = runs.find((r) => r.concurrency === top)!;
  const episodes = ref.result.groups.flatMap((g) => g.episodes);
  const stopReasons: Record<string, number> = {};
  for (const e of episodes) stopReasons[e.stopReason] = (stopReasons[e.stopReason] ?? 0) + 1;
  return {
    model: arm.model,
    engine: arm.engine,
    prefixCacheMb: arm.prefixCacheMb,
    weights,
    stop_reasons: stopReasons,
    mean_turns: episodes.reduce((a, e) => a + e.turns.length, 0) / episodes.length,
    mean_sampled_tokens_per_episode: sampledTokens(episodes) / episodes.length,
  };
}

function sampledTokens(episodes: CollectResult["groups"][number]["episodes"]): number {
  return episodes.reduce(
    (a, e) => a + (e.sampledTokens ?? e.turns.reduce((n, t) => n + t.actionTokens.length, 0)),
    0,
  );
}
