/**
 * Heap probe for the local learner (not the benchmark): one LoRA learner on `local/games` runs
 * an `importance_sampling` forward_backward of 8 datums at each given length, in order, and
 * prints the process's resident memory after each. jax-js's wasm allocator keeps every buffer
 * size it has seen, so a new padded shape grows the heap and a repeated one does not: this is
 * the measurement behind `lib/local/shapes.ts`.
 *
 * Usage: `deno run -A bench/heap_probe.ts 500 1000 250 500 1000` (lengths in tokens).
 *
 * @module
 */

import { Learner, type LearnerDatum } from "../lib/local/train/mod.ts";
import { findLocalModel, loadBaseWeights } from "../lib/local/models.ts";
import { LoraSpecSchema } from "../lib/local/model/config.ts";
import { initEngine } from "../lib/local/engine.ts";

const lengths = Deno.args.map(Number);
if (lengths.length === 0 || lengths.some((n) => !Number.isInteger(n) || n < 2 || n > 1024)) {
  console.error("usage: deno run -A bench/heap_probe.ts LENGTH... (integers in 2..1024)");
  Deno.exit(2);
}
await initEngine();
const spec = findLocalModel("local/games")!;
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
    await learner.forwardBackward(
      Array.from({ length: 8 }, () => datum(t)),
      "importance_sampling",
      {},
    );
    console.log(`${t} tokens: rss ${(Deno.memoryUsage().rss / 2 ** 30).toFixed(2)} GiB`);
  } catch (e) {
    console.log(`${t} tokens: ${(e as Error).message}`);
    break;
  }
}
// jax-js's wasm worker pool keeps the event loop alive.
Deno.exit(0);
