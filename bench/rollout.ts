/**
 * Rollout throughput: episodes per second of `collectGroups` on GuessTheNumber (easy) with the
 * default model `local/games2`, at 1, 8 and 32 episodes in flight, for four arms: the jax-js
 * sampler ("before") and the ONNX Runtime sampler ("after", the default), each without and with
 * its prefix cache. Every arm plays the same episodes (same env seeds and sampler seeds) in one
 * process, so all arms share the machine's load, and the rounds alternate their order, so
 * ratios are measured side by side. The figures committed before (jax-js) are carried over.
 *
 * Each timed collection gets a fresh in-process server: a prefix cache then starts empty, as
 * it does in training, where every step samples from new weights (a cache kept across
 * settings would hold the very prompts the next setting replays).
 *
 * @module
 */

import { startLocalServer } from "../lib/local/server/mod.ts";
import { findLocalModel } from "../lib/local/models.ts";
import { ModelInput, ServiceClient } from "../lib/tinker/mod.ts";
import { collectGroups, type CollectResult, type GroupSpec } from "../lib/rollout/mod.ts";
import { make } from "../lib/envs/mod.ts";
import { getRenderer } from "../lib/renderers/mod.ts";
import { getTokenizer } from "../lib/tokenizers/mod.ts";
import {
  type Arm,
  type CommittedBefore,
  readCommittedBefore,
  type RolloutLevel,
  summarize,
  type TimedRun,
} from "./rollout_figures.ts";

export type { RolloutLevel } from "./rollout_figures.ts";

/** Sizes of the rollout benchmark. */
export const ROLLOUT_BENCH = {
  env: "game:GuessTheNumber-v0-easy",
  model: "local/games2",
  groups: 8,
  groupSize: 8,
  /**
   * At 1 in flight each group plays only its first 2 episodes (the same seeds as theirs at 8
   * and 32 in flight): 16 episodes instead of 64, to keep the whole bench near 10 minutes.
   */
  groupSizeAt1: 2,
  maxTokensPerTurn: 40,
  concurrency: [1, 8, 32],
  /** Each engine with the prefix cache off and at the size the backend's option documents. */
  arms: [
    { engine: "jax", prefixCacheMb: 0 },
    { engine: "jax", prefixCacheMb: 192 },
    { engine: "onnx", prefixCacheMb: 0 },
    { engine: "onnx", prefixCacheMb: 192 },
  ],
  rounds: 3,
  seed: 17,
  /** Untimed, per arm, first: compiles every shape the runs meet. */
  warmupGroups: 4,
} as const;

/** The results file this benchmark overwrites (its committed figures are carried over). */
const RESULTS = new URL("./results/rollout.json", import.meta.url);

/** One timed collection: an arm and a number of episodes in flight. */
interface Setting extends Arm {
  concurrency: number;
}

/** Runs the benchmark on its own local servers; `log` gets progress lines. */
export async function benchRollout(log: (msg: string) => void): Promise<{
  sizes: typeof ROLLOUT_BENCH;
  machine: { cores: number; deno: string };
  load_average: { start: number[]; end: number[] };
  committed_before: CommittedBefore | null;
  arms: ReturnType<typeof summarize>["arms"];
  same_episodes_in_every_arm: boolean;
  levels: RolloutLevel[];
  goal: ReturnType<typeof summarize>["goal"];
}> {
  const B = ROLLOUT_BENCH;
  const loadAtStart = Deno.loadavg();
  // Read before run.ts overwrites the file with this run's figures.
  const committedBefore = await readCommittedBefore(RESULTS, B.model);
  if (!findLocalModel(B.model)) throw new Error(`rollout bench: unknown model ${B.model}`);
  const file = new URL(`../models/${B.model.replace("/", "_")}.safetensors`, import.meta.url);
  const weights = { [B.model]: await Deno.stat(file).then(() => "trained", () => "random init") };
  const arms: Arm[] = B.arms.map((a) => ({ model: B.model, ...a }));
  const settings: Setting[] = B.concurrency.flatMap((concurrency) =>
    arms.map((a) => ({ ...a, concurrency }))
  );
  log(`rollout: ${B.model}, jax-js vs ONNX Runtime; warm-up (${B.warmupGroups} groups each)`);
  for (const a of arms) await collectOnFreshServer({ ...a, concurrency: 32 }, B.warmupGroups);
  const runs: TimedRun[] = [];
  for (let round = 1; round <= B.rounds; round++) {
    const order = round % 2 ? settings : [...settings].reverse();
    for (const s of order) {
      const { result, cacheStats } = await collectOnFreshServer(s, B.groups);
      runs.push({ ...s, round, result, cacheStats });
      log(
        `  round ${round}, ${s.engine}, ${s.concurrency} in flight, prefix cache ${
          s.prefixCacheMb ? "on" : "off"
        }: ${result.timing.episodesPerSecond.toFixed(2)} episodes/s (${
          (result.timing.wallMs / 1000).toFixed(1)
        } s)`,
      );
    }
  }
  const figures = summarize(runs, weights, committedBefore);
  return {
    sizes: B,
    machine: { cores: navigator.hardwareConcurrency, deno: Deno.version.deno },
    load_average: { start: loadAtStart, end: Deno.loadavg() },
    committed_before: committedBefore,
    ...figures,
  };
}

/** The bench's first `groups` group specs; the same env seeds for every setting. */
function groupSpecs(groups: number, groupSize: number): GroupSpec[] {
  return Array.from({ length: groups }, (_, g) => ({
    makeEnv: () => make(ROLLOUT_BENCH.env),
    envSeed: 1000 + g,
    groupSize,
  }));
}

/**
 * Plays the setting's episodes on a server of its own, timed by `collectGroups` (server start
 * and the sampler's first load are outside the timing).
 */
async function collectOnFreshServer(s: Setting, groups: number): Promise<{
  result: CollectResult;
  cacheStats: { hits: number; misses: number; savedTokens: number } | null;
}> {
  const B = ROLLOUT_BENCH;
  const dataDir = await Deno.makeTempDir({ prefix: "tb-bench-rollout-" });
  const server = await startLocalServer({
    dataDir,
    prefixCacheBytes: s.prefixCacheMb * 2 ** 20,
    samplerEngine: s.engine,
  });
  try {
    const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
    try {
      const sampler = await service.createSamplingClient({ baseModel: s.model });
      // Loads the weights; fewer than 32 tokens in all, so the prefix cache keeps nothing.
      await sampler.sample({
        prompt: ModelInput.fromInts(getTokenizer(s.model).encode("hi")),
        numSamples: 1,
        samplingParams: { maxTokens: 1, seed: 0 },
      }).result();
      const groupSize = s.concurrency === 1 ? B.groupSizeAt1 : B.groupSize;
      const result = await collectGroups(groupSpecs(groups, groupSize), sampler, {
        groupSize,
        maxConcurrency: s.concurrency,
        maxTokensPerTurn: B.maxTokensPerTurn,
        seed: B.seed,
        renderer: getRenderer(s.model),
      });
      const stats = server.backend.prefixCacheStats();
      return {
        result,
        cacheStats: stats &&
          { hits: stats.hits, misses: stats.misses, savedTokens: stats.savedTokens },
      };
    } finally {
      service.close();
    }
  } finally {
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}
