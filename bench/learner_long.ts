/**
 * `deno task bench learner_long`: the learner alone on one long agent turn of `local/long`
 * (rotary positions, a 256-token window): a LoRA step (forward_backward + optim_step) on a
 * 55,000-token datum whose last 200 tokens are trained, as a proxy turn's reply is, and on
 * shorter ones. Records each step's time and the process's peak resident memory. Issue 45's
 * goal for the 55k turn is 30 s.
 *
 * @module
 */

import { Learner } from "../lib/local/train/mod.ts";
import { findLocalModel, loadBaseWeights } from "../lib/local/models.ts";
import { LoraSpecSchema } from "../lib/local/model/config.ts";
import { Rng } from "../lib/util/random.ts";

/** Sizes of the benchmark. */
export const LEARNER_LONG_BENCH = {
  model: "local/long",
  tokens: [8_000, 55_000],
  replyTokens: 200,
  loraRank: 32,
};

/** Peak resident memory of this process so far, MiB (Linux). */
function peakRssMib(): number {
  const status = Deno.readTextFileSync("/proc/self/status");
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
}

/** Runs the benchmark. */
export async function benchLearnerLong(log: (msg: string) => void) {
  const spec = findLocalModel(LEARNER_LONG_BENCH.model)!;
  const base = await loadBaseWeights(spec);
  const lora = LoraSpecSchema.parse({ rank: LEARNER_LONG_BENCH.loraRank });
  const rng = new Rng(1);
  const steps = [];
  for (const n of LEARNER_LONG_BENCH.tokens) {
    const learner = await Learner.create({ config: spec.config, base, lora });
    const seq = Int32Array.from({ length: n + 1 }, () => rng.int(spec.config.vocabSize));
    const weights = new Float32Array(n).fill(1, n - LEARNER_LONG_BENCH.replyTokens);
    const t0 = performance.now();
    const out = await learner.forwardBackward(
      [{
        tokens: seq.slice(0, -1),
        inputs: {
          target_tokens: { shape: [n], data: seq.slice(1) },
          weights: { shape: [n], data: weights },
        },
      }],
      "cross_entropy",
      {},
    );
    const t1 = performance.now();
    await learner.optimStep({ learning_rate: 1e-4 });
    const t2 = performance.now();
    learner.dispose();
    const step = {
      tokens: n,
      forward_backward_s: Number(((t1 - t0) / 1000).toFixed(2)),
      optim_step_s: Number(((t2 - t1) / 1000).toFixed(3)),
      seconds: Number(((t2 - t0) / 1000).toFixed(2)),
      loss: out.metrics["loss:sum"],
      peak_rss_mib: peakRssMib(),
    };
    log(`learner_long: ${n} tokens in ${step.seconds} s (peak RSS ${step.peak_rss_mib} MiB)`);
    steps.push(step);
  }
  return { sizes: LEARNER_LONG_BENCH, goal_seconds_55k: 30, load_average: Deno.loadavg(), steps };
}
