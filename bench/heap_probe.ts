/**
 * Heap probes for the local backend (not the benchmark). jax-js's wasm allocator keeps every
 * buffer size it has seen, so a new padded shape grows the heap for good and a repeated one
 * does not. These print the process's resident memory and jax-js's heap (`lib/local/heap.ts`)
 * as work goes on; they are the measurements behind `lib/local/shapes.ts`,
 * `lib/local/train/batching.ts` and docs/local-memory.md.
 *
 * - `learner LENGTH...`: one LoRA learner runs an `importance_sampling` forward_backward of 8
 *   datums at each length in turn (e.g. `learner 500 1000 250 500 1000`).
 * - `rollouts PREFIX_CACHE_MB [WAVES]`: an in-process server plays waves of 32
 *   GuessTheNumber-easy episodes (4 groups of 8, all in flight; default 12 waves), with the
 *   given prefix cache (0 = off).
 *
 * Both run on `local/games` unless `--model NAME` names another local model.
 *
 * Usage: `deno run -A bench/heap_probe.ts learner 500 1000` or
 * `… rollouts 192 --model local/games2`.
 *
 * @module
 */

import { Learner, type LearnerDatum } from "../lib/local/train/mod.ts";
import { findLocalModel, loadBaseWeights } from "../lib/local/models.ts";
import { LoraSpecSchema } from "../lib/local/model/config.ts";
import { initEngine } from "../lib/local/engine.ts";
import { heapBytes } from "../lib/local/heap.ts";
import { startLocalServer } from "../lib/local/server/mod.ts";
import { ServiceClient } from "../lib/tinker/mod.ts";
import { collectGroups } from "../lib/rollout/mod.ts";
import { make } from "../lib/envs/mod.ts";
import { getRenderer } from "../lib/renderers/mod.ts";

const USAGE =
  "usage: deno run -A bench/heap_probe.ts learner LENGTH... [--model NAME] (integers in 2..1024)\n" +
  "       deno run -A bench/heap_probe.ts rollouts PREFIX_CACHE_MB [WAVES] [--model NAME]";
const rss = () =>
  `rss ${(Deno.memoryUsage().rss / 2 ** 30).toFixed(2)} GiB, heap ${
    (heapBytes() / 2 ** 30).toFixed(2)
  } GiB`;
const modelFlag = Deno.args.indexOf("--model");
const model = modelFlag < 0 ? "local/games" : Deno.args[modelFlag + 1];
const [mode, ...args] = Deno.args.filter((_, i) =>
  modelFlag < 0 || i < modelFlag || i > modelFlag + 1
);
const nums = args.map(Number);
if (
  (mode !== "learner" && mode !== "rollouts") || nums.length === 0 || !findLocalModel(model) ||
  nums.some((n) => !Number.isInteger(n) || n < 0) ||
  (mode === "learner" && nums.some((n) => n < 2 || n > 1024))
) {
  console.error(USAGE);
  Deno.exit(2);
}
await initEngine();
if (mode === "learner") await probeLearner(nums);
else await probeRollouts(nums[0], nums[1] ?? 12);
// jax-js's wasm worker pool keeps the event loop alive.
Deno.exit(0);

async function probeLearner(lengths: number[]): Promise<void> {
  const spec = findLocalModel(model)!;
  const learner = await Learner.create({
    config: spec.config,
    base: await loadBaseWeights(spec),
    lora: LoraSpecSchema.parse({ rank: 32, alpha: 32 }),
    trainable: "lora",
  });
  const datum = (t: number): LearnerDatum => ({
    tokens: new Int32Array(t).fill(5),
    inputs: {
      target_tokens: { shape: [t], data: new Int32Array(t).fill(6) },
      logprobs: { shape: [t], data: new Float32Array(t).fill(-1) },
      advantages: { shape: [t], data: new Float32Array(t).fill(0.1) },
    },
  });
  for (const t of lengths) {
    try {
      const data = Array.from({ length: 8 }, () => datum(t));
      await learner.forwardBackward(data, "importance_sampling", {});
      console.log(`${t} tokens: ${rss()}`);
    } catch (e) {
      console.log(`${t} tokens: ${(e as Error).message}`);
      return;
    }
  }
}

async function probeRollouts(cacheMb: number, waves: number): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-heap-probe-" });
  const server = await startLocalServer({
    dataDir,
    prefixCacheBytes: cacheMb * 2 ** 20,
    // This probe meters jax-js's heap, which only the jax-js sampler uses.
    samplerEngine: "jax",
  });
  try {
    const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
    const sampler = await service.createSamplingClient({ baseModel: model });
    const renderer = getRenderer(model);
    for (let w = 0; w < waves; w++) {
      const specs = Array.from({ length: 4 }, (_, g) => ({
        makeEnv: () => make("game:GuessTheNumber-v0-easy"),
        envSeed: 5000 + 10 * w + g,
      }));
      const t0 = performance.now();
      await collectGroups(specs, sampler, {
        groupSize: 8,
        maxConcurrency: 32,
        maxTokensPerTurn: 40,
        seed: w,
        renderer,
      });
      const stats = server.backend.prefixCacheStats();
      console.log(
        `wave ${w}: ${((performance.now() - t0) / 1000).toFixed(1)} s, ${rss()}` +
          (stats
            ? `, cache ${stats.entries} entries (${
              (stats.bytes / 2 ** 20).toFixed(0)
            } MiB), ${stats.hits} hits`
            : ""),
      );
    }
  } finally {
    await server.close();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
}
