/**
 * What sequence-length buckets cost in an RL training step: the learning benchmark's batch
 * (32 GuessTheNumber-easy episodes of 450–650 tokens, one `importance_sampling` datum each, on
 * `local/games` with LoRA rank 32), timed as forward_backward + optim_step with each datum at
 * its own length (four buckets per octave: 512, 640, 768) against the same datums padded to
 * 1024 tokens with zero-advantage positions (what power-of-two buckets made of them). The two
 * alternate within each round, so both see the same machine load.
 *
 * @module
 */

import { Learner, type LearnerDatum } from "../lib/local/train/mod.ts";
import { findLocalModel, loadBaseWeights } from "../lib/local/models.ts";
import { LoraSpecSchema } from "../lib/local/model/config.ts";
import { Rng } from "../lib/local/random.ts";
import { median } from "./local_engine.ts";

/** Sizes of the benchmark. */
export const PADDING_BENCH = {
  model: "local/games",
  episodes: 32,
  minTokens: 450,
  maxTokens: 650,
  paddedTo: 1024,
  rank: 32,
  stepsPerRound: 3,
  rounds: 2,
};

/** An RL datum of `n` tokens; positions past `real` are padding (advantage and logprob 0). */
function rlDatum(rng: Rng, vocab: number, n: number, real: number): LearnerDatum {
  const toks = Int32Array.from({ length: n + 1 }, () => rng.int(vocab));
  const advantages = new Float32Array(n), logprobs = new Float32Array(n);
  for (let i = 0; i < real; i++) {
    advantages[i] = rng.uniform() - 0.5;
    logprobs[i] = -1;
  }
  return {
    tokens: toks.slice(0, -1),
    inputs: {
      target_tokens: { shape: [n], data: toks.slice(1) },
      logprobs: { shape: [n], data: logprobs },
      advantages: { shape: [n], data: advantages },
    },
  };
}

/** Runs the comparison; returns medians per arm and their ratio (padded / bucketed). */
export async function benchPadding(log: (msg: string) => void) {
  const spec = findLocalModel(PADDING_BENCH.model)!;
  const learner = await Learner.create({
    config: spec.config,
    base: await loadBaseWeights(spec),
    lora: LoraSpecSchema.parse({ rank: PADDING_BENCH.rank, alpha: PADDING_BENCH.rank }),
    trainable: "lora",
  });
  const rng = new Rng(0);
  const lengths = Array.from(
    { length: PADDING_BENCH.episodes },
    () => PADDING_BENCH.minTokens + rng.int(PADDING_BENCH.maxTokens - PADDING_BENCH.minTokens + 1),
  );
  const arms = {
    bucketed: lengths.map((n) => rlDatum(new Rng(n), spec.config.vocabSize, n, n)),
    padded: lengths.map((n) =>
      rlDatum(new Rng(n), spec.config.vocabSize, PADDING_BENCH.paddedTo, n)
    ),
  };
  const step = async (data: LearnerDatum[]) => {
    const t0 = performance.now();
    await learner.forwardBackward(data, "importance_sampling", {});
    await learner.optimStep({ learning_rate: 1e-6 });
    return performance.now() - t0;
  };
  // Warm-up compiles every shape of both arms.
  for (const data of Object.values(arms)) await step(data);
  const ms: Record<keyof typeof arms, number[]> = { bucketed: [], padded: [] };
  for (let round = 1; round <= PADDING_BENCH.rounds; round++) {
    for (const arm of ["bucketed", "padded"] as const) {
      for (let i = 0; i < PADDING_BENCH.stepsPerRound; i++) ms[arm].push(await step(arms[arm]));
      log(`round ${round}: ${arm} median ${median(ms[arm]).toFixed(0)} ms`);
    }
  }
  learner.dispose();
  const bucketed = median(ms.bucketed), padded = median(ms.padded);
  return {
    sizes: PADDING_BENCH,
    lengths,
    step_ms: { bucketed, padded, speedup: padded / bucketed },
    raw_ms: ms,
  };
}
