/**
 * The held-out evaluation of an environment mix (./mix.ts), per environment and over all, on the
 * trainer's one evaluator (`evaluateRun`).
 *
 * @module
 */

import type { HeldOutEvaluation, PolicyScore } from "../rundir/mod.ts";
import { evaluateRun, HELD_OUT_SAMPLER_SEED } from "../trainer/mod.ts";
import { HELD_OUT_ENV_SEEDS } from "../util/random.ts";
import type { MixEnvironment } from "./mix_environments.ts";
import type { PlanEvaluationInput } from "./plan.ts";

/** What {@link evaluateMixRun} needs of a finished multi-environment run. */
export type MixEvaluationInput = PlanEvaluationInput & { environments: MixEnvironment[] };

/**
 * The held-out comparison of a multi-environment run, per environment and over all: each
 * environment plays `eval.episodes` held-out episodes with the base model and the trained
 * policy, from held-out seeds when its tasks are drawn from seeds, else from a split of its task
 * list the run does not train on (its `test` split when it trains on `train`); an environment
 * that trains on every split it has is left out with the reason.
 */
export async function evaluateMixRun(i: MixEvaluationInput): Promise<HeldOutEvaluation> {
  const t0 = performance.now();
  const h = i.heldOut;
  const environments: NonNullable<HeldOutEvaluation["environments"]> = {};
  const played = i.environments.filter((e) => "split" in e.heldOut);
  const total = 2 * h.episodes * played.length;
  let done = 0;
  const scores: { base: PolicyScore; trained: PolicyScore }[] = [];
  for (const env of i.environments) {
    if (!("split" in env.heldOut)) {
      environments[env.name] = { skipped: env.heldOut.skipped };
      continue;
    }
    const before = done;
    const one = await evaluateRun({
      ...i,
      makeEnv: env.makeEnv(env.heldOut.split),
      sampling: env.sampling,
      onProgress: (p) => i.onProgress?.({ done: done = before + p.done, total }),
    });
    environments[env.name] = {
      base: one.base,
      trained: one.trained,
      ...(env.heldOut.from === "tasks" ? { split: env.heldOut.split } : {}),
    };
    scores.push(one);
  }
  const pool = (pick: (s: { base: PolicyScore; trained: PolicyScore }) => PolicyScore) => {
    const n = scores.reduce((a, s) => a + pick(s).episodes, 0);
    const avg = (f: (p: PolicyScore) => number) =>
      n ? scores.reduce((a, s) => a + f(pick(s)) * pick(s).episodes, 0) / n : 0;
    return { success: avg((p) => p.success), mean_reward: avg((p) => p.mean_reward), episodes: n };
  };
  return {
    env_id: `mix:${i.environments.map((e) => e.name).join("+")}`,
    model: h.model,
    episodes: h.episodes,
    env_seeds: [HELD_OUT_ENV_SEEDS.first, HELD_OUT_ENV_SEEDS.first + h.episodes - 1],
    sampler_seed: HELD_OUT_SAMPLER_SEED,
    temperature: h.collect.temperature,
    step: i.step,
    base: pool((s) => s.base),
    trained: pool((s) => s.trained),
    environments,
    seconds: (performance.now() - t0) / 1000,
  };
}
