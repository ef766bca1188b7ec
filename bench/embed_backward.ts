/**
 * The full fine-tuning embedding backward, side by side in one run: the autodiff of the one-hot
 * lookup (what `embedBackwardProgram` did before) against the written-out `oneHotᵀ @ dx` it
 * does now (`lib/local/train/step.ts`), at the vocabularies of `local/bench` (512),
 * `local/games2` (743) and `local/tools` (1441), 16 rows × 128 tokens, and the whole full
 * fine-tuning step of `local/tools` at that size. Alternating rounds; medians.
 *
 * Run: `deno task bench embed_backward` (writes bench/results/embed_backward.json).
 *
 * @module
 */

import { jit, numpy as np, valueAndGrad } from "@jax-js/jax";
import { int32Array, type ParamTree } from "../lib/local/engine.ts";
import { embedTokens } from "../lib/local/model/gpt.ts";
import { embedBackwardProgram } from "../lib/local/train/step.ts";
import { Learner, type LearnerDatum } from "../lib/local/train/mod.ts";
import { findLocalModel, loadBaseWeights } from "../lib/local/models.ts";
import { LoraSpecSchema } from "../lib/local/model/config.ts";
import { median } from "./local_engine.ts";

const [ROWS, SEQ, D, CONTEXT] = [16, 128, 128, 1024];
/** The sizes (`--smoke` shrinks them, see bench/smoke.ts). */
export const EMBED_BACKWARD_BENCH = { vocabs: [512, 743, 1441], rounds: 3, fullSteps: 4 };

/** The formulation before: the gradient of the lookup by autodiff. */
const autodiffBackward = jit(function autodiffBackward(
  table: ParamTree,
  acc: ParamTree,
  tokens: np.Array,
  dx: np.Array,
): ParamTree {
  const f = (t: ParamTree, x: np.Array, g: np.Array) => embedTokens(t, x).mul(g).sum();
  const [value, grads] = valueAndGrad(f)(table, tokens, dx);
  value.dispose();
  return Object.fromEntries(Object.keys(acc).map((k) => [k, acc[k].add(grads[k])]));
});

async function timeMs(run: () => ParamTree): Promise<number> {
  const t0 = performance.now();
  const out = run();
  for (const a of Object.values(out)) {
    await a.data();
  }
  return performance.now() - t0;
}

async function fullStepMs(): Promise<number> {
  const spec = findLocalModel("local/tools")!;
  const learner = await Learner.create({
    config: spec.config,
    base: await loadBaseWeights(spec),
    lora: LoraSpecSchema.parse({ rank: 1, alpha: 1 }),
    trainable: "full",
  });
  const data: LearnerDatum[] = Array.from({ length: ROWS }, (_, r) => {
    const toks = Int32Array.from({ length: SEQ + 1 }, (_, i) => (i * 7 + r) % 1441);
    return {
      tokens: toks.slice(0, -1),
      inputs: {
        target_tokens: { shape: [SEQ], data: toks.slice(1) },
        weights: { shape: [SEQ], data: new Float32Array(SEQ).fill(1) },
      },
    };
  });
  const times: number[] = [];
  for (let i = 0; i < EMBED_BACKWARD_BENCH.fullSteps; i++) {
    const t0 = performance.now();
    await learner.forwardBackward(data, "cross_entropy", {}, {});
    await learner.optimStep({ learning_rate: 1e-5 });
    if (i > 0) times.push(performance.now() - t0); // the first compiles
  }
  learner.dispose();
  return median(times);
}

/** Medians per vocabulary (ms) of both formulations, and the full step of `local/tools`. */
export async function benchEmbedBackward(log: (m: string) => void) {
  const rows: Record<string, { autodiff_ms: number; written_out_ms: number; ratio: number }> = {};
  for (const vocab of EMBED_BACKWARD_BENCH.vocabs) {
    const ids = Array.from({ length: ROWS * SEQ }, (_, i) => (i * 7) % vocab);
    const zeros = () => ({
      "wte.weight": np.zeros([vocab, D]),
      "wpe.weight": np.zeros([CONTEXT, D]),
    });
    const table = { "wte.weight": np.ones([vocab, D]), "wpe.weight": np.ones([CONTEXT, D]) };
    const dx = np.ones([ROWS, SEQ, D]);
    const before: number[] = [], after: number[] = [];
    for (let round = 0; round <= EMBED_BACKWARD_BENCH.rounds; round++) {
      const a = await timeMs(() =>
        autodiffBackward(
          { "wte.weight": table["wte.weight"].ref, "wpe.weight": table["wpe.weight"].ref },
          zeros(),
          int32Array(ids, [ROWS, SEQ]),
          dx.ref,
        )
      );
      const b = await timeMs(() =>
        embedBackwardProgram(zeros(), int32Array(ids, [ROWS, SEQ]), dx.ref, {
          vocab,
          context: CONTEXT,
        })
      );
      if (round > 0) before.push(a), after.push(b); // round 0 compiles
    }
    rows[vocab] = {
      autodiff_ms: median(before),
      written_out_ms: median(after),
      ratio: median(before) / median(after),
    };
    log(
      `vocab ${vocab}: autodiff ${median(before).toFixed(0)} ms, written out ${
        median(after).toFixed(0)
      } ms`,
    );
  }
  const step = await fullStepMs();
  log(`local/tools full fine-tuning step (${ROWS}x${SEQ}): ${step.toFixed(0)} ms`);
  return {
    benchmark: "embed_backward",
    date: new Date().toISOString(),
    shape: { rows: ROWS, seq: SEQ, d_model: D, context: CONTEXT },
    load_average: Deno.loadavg(),
    embedding_backward: rows,
    local_tools_full_step_ms: step,
  };
}
