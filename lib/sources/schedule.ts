/**
 * The scheduler of a run's `pipeline.mode`, for a plan.
 *
 * @module
 */

import type { GroupSpec, Sampler } from "../rollout/mod.ts";
import type { GroupSource, RolloutContext } from "../trainer/mod.ts";
import { AsyncRollouts } from "./async.ts";
import type { Plan, PlayedGroups } from "./plan.ts";
import { SyncRollouts } from "./sync.ts";

/**
 * `plan` on the scheduler of `ctx.rollouts.mode`, starting with `sampler` (the weights after
 * `startStep` steps): `async` plays ahead, `sync` and `stream` play each step's groups when it
 * comes.
 */
export function scheduleRollouts<S extends GroupSpec, P extends PlayedGroups>(
  plan: Plan<S, P>,
  ctx: RolloutContext,
  sampler: Sampler,
  startStep: number,
): GroupSource {
  return ctx.rollouts.mode === "async"
    ? new AsyncRollouts(plan, ctx, sampler, startStep, startStep + 1)
    : new SyncRollouts(plan, ctx, sampler, startStep);
}
