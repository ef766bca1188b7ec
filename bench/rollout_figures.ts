/**
 * Figures of the rollout benchmark (`bench/rollout.ts`): medians over rounds, the ratios
 * between models, concurrencies and cache settings, the check that every setting played the
 * same episodes, and the figures committed before this run, carried over from the results file.
 *
 * @module
 */

import { z } from "zod";
import type { CollectResult } from "../lib/rollout/mod.ts";
import { median } from "./local_engine.ts";

/** The model every ratio is taken against: the byte-level base model ("before"). */
export const BEFORE_MODEL = "local/games";

/** One timed collection of the benchmark. */
export interface TimedRun {
  model: string;
  prefixCacheMb: number;
  concurrency: number;
  round: number;
  result: CollectResult;
  /** The prefix cache's counters after the run (null with the cache off). */
  cacheStats: { hits: number; misses: number; savedTokens: number } | null;
}

/** One setting's figures (medians over rounds). */
export interface RolloutLevel {
  model: string;
  concurrency: number;
  prefix_cache: boolean;
  /** Episodes per run (fewer at 1 in flight: see the sizes). */
  episodes: number;
  episodes_per_s: number;
  sampled_tokens_per_s: number;
  /** Episodes/s ÷ `local/games`' at the same concurrency and cache setting. */
  ratio_vs_games: number;
  /** Episodes/s ÷ the same model's at 1 in flight, same cache setting. */
  ratio_vs_1: number;
  /** Episodes/s with the prefix cache ÷ without it, same model and concurrency (1 when off). */
  ratio_vs_no_cache: number;
  /** Episodes/s ÷ the committed `local/games` figure at this setting (null if none). */
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
  date: z.string(),
  weights: z.string(),
  episodes: z.number(),
  levels: z.array(CommittedLevelSchema),
});

/** The `local/games` figures committed before `local/games2` was measured. */
export type CommittedBefore = z.infer<typeof CommittedBeforeSchema>;

/**
 * The committed "before" figures: the file's own `committed_before` if it has one (a file this
 * benchmark wrote), else its figures if it is the earlier one-model file; null if neither.
 */
export async function readCommittedBefore(file: URL): Promise<CommittedBefore | null> {
  const text = await Deno.readTextFile(file).catch(() => null);
  if (text === null) return null;
  const json = JSON.parse(text);
  const kept = CommittedBeforeSchema.safeParse(json.committed_before);
  if (kept.success) return kept.data;
  // Unknown keys are dropped: the old file's ratios and per-round figures stay behind.
  const old = CommittedBeforeSchema.safeParse(json);
  return old.success ? old.data : null;
}

/** Levels, per-model facts and the goal (≥ 3× at 32 in flight) from the runs. */
export function summarize(
  runs: TimedRun[],
  weights: Record<string, string>,
  committed: CommittedBefore | null,
) {
  const key = (m: string, c: number, cacheMb: number) => `${m}|${c}|${cacheMb > 0}`;
  const bySetting = Map.groupBy(runs, (r) => key(r.model, r.concurrency, r.prefixCacheMb));
  const eps = (r: TimedRun) => r.result.timing.episodesPerSecond;
  const rate = (m: string, c: number, cacheMb: number) =>
    median(bySetting.get(key(m, c, cacheMb))!.map(eps));
  const models = [...new Set(runs.map((r) => r.model))];
  const levels: RolloutLevel[] = [...bySetting.values()].map((rs) => {
    const { model, concurrency: c, prefixCacheMb: mb } = rs[0];
    const episodes = rs.map((r) => r.result.groups.flatMap((g) => g.episodes));
    const committedRate = committed?.levels.find((l) =>
      l.concurrency === c && l.prefix_cache === mb > 0
    )?.episodes_per_s;
    return {
      model,
      concurrency: c,
      prefix_cache: mb > 0,
      episodes: episodes[0].length,
      episodes_per_s: rate(model, c, mb),
      sampled_tokens_per_s: median(
        rs.map((r, i) => sampledTokens(episodes[i]) / (r.result.timing.wallMs / 1000)),
      ),
      ratio_vs_games: rate(model, c, mb) / rate(BEFORE_MODEL, c, mb),
      ratio_vs_1: rate(model, c, mb) / rate(model, 1, mb),
      ratio_vs_no_cache: rate(model, c, mb) / rate(model, c, 0),
      ratio_vs_committed_before: committedRate ? rate(model, c, mb) / committedRate : null,
      prefix_cache_stats: rs.at(-1)!.cacheStats,
      all_episodes_per_s: rs.map(eps),
    };
  }).sort((a, b) =>
    models.indexOf(a.model) - models.indexOf(b.model) || a.concurrency - b.concurrency ||
    Number(a.prefix_cache) - Number(b.prefix_cache)
  );
  const after = models.find((m) => m !== BEFORE_MODEL)!;
  const top = Math.max(...runs.map((r) => r.concurrency));
  return {
    models: models.map((m) => describeModel(m, weights[m], runs.filter((r) => r.model === m))),
    levels,
    goal: {
      target_ratio: 3,
      concurrency: top,
      before: BEFORE_MODEL,
      after,
      /** After ÷ before, both with the cache off (the default). */
      cache_off: rate(after, top, 0) / rate(BEFORE_MODEL, top, 0),
      /** After ÷ before, both with the cache on. */
      cache_on: rate(after, top, 1) / rate(BEFORE_MODEL, top, 1),
      /** After with the cache ÷ before without it (today's default). */
      after_cache_on_vs_before_cache_off: rate(after, top, 1) / rate(BEFORE_MODEL, top, 0),
    },
  };
}

/**
 * What one model's episodes look like, from its first run at the highest concurrency without
 * the cache, and whether every setting played the same episodes (same action tokens for the
 * same group and episode index; runs at 1 in flight play each group's first episodes only).
 */
function describeModel(model: string, weights: string, runs: TimedRun[]) {
  const plays = new Map<string, Set<string>>();
  for (const r of runs) {
    for (const g of r.result.groups) {
      g.episodes.forEach((e, i) => {
        const id = `${g.id}:${i}`;
        if (!plays.has(id)) plays.set(id, new Set());
        plays.get(id)!.add(JSON.stringify(e.turns.map((t) => t.actionTokens)));
      });
    }
  }
  const top = Math.max(...runs.map((r) => r.concurrency));
  const ref = runs.find((r) => r.concurrency === top && r.prefixCacheMb === 0)!;
  const episodes = ref.result.groups.flatMap((g) => g.episodes);
  const stopReasons: Record<string, number> = {};
  for (const e of episodes) stopReasons[e.stopReason] = (stopReasons[e.stopReason] ?? 0) + 1;
  return {
    model,
    weights,
    same_episodes_in_every_setting: [...plays.values()].every((s) => s.size === 1),
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
