/**
 * The plan of a prepared run (one environment or the `environments:` mix) and the scheduler of
 * its `pipeline.mode`.
 *
 * @module
 */

import type { GroupSpec, Sampler } from "../rollout/mod.ts";
import type { GroupSource, PreparedRun, RolloutContext } from "../trainer/mod.ts";
import { AsyncRollouts } from "./async.ts";
import { EnvironmentPlan } from "./environment.ts";
import { EnvironmentMix } from "./mix.ts";
import type { Plan, PlayedGroups } from "./plan.ts";
import { SyncRollouts } from "./sync.ts";

/**
 * What a prepared environment run plays: its `environments:` mix (each entry resolved; a
 * mistake is a ConfigError naming it), else its one environment.
 *
 * @example
 * const plan = await openPlan(prepared);
 * plan.groupSpecs(1);
 */
export async function openPlan(p: PreparedRun): Promise<Plan> {
  const mix = await EnvironmentMix.open(p.config);
  if (mix) return mix;
  if (!p.makeEnv) throw new Error("openPlan: a prepared run without an environment");
  return new EnvironmentPlan(p.config, p.makeEnv);
}

/**
 * `plan` on the scheduler of `ctx.cfg.pipeline.mode`, starting with `sampler` (the weights after
 * `startStep` steps): `async` plays ahead, `sync` and `stream` play each step's groups when it
 * comes.
 */
export function scheduleRollouts<S extends GroupSpec, P extends PlayedGroups>(
  plan: Plan<S, P>,
  ctx: RolloutContext,
  sampler: Sampler,
  startStep: number,
): GroupSource {
  return ctx.cfg.pipeline.mode === "async"
    ? new AsyncRollouts(plan, ctx, sampler, startStep, startStep + 1)
    : new SyncRollouts(plan, ctx, sampler, startStep);
}
