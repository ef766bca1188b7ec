/**
 * A plan: what a run plays and how it judges it, apart from when it is played. It says which
 * groups a step needs ({@link Plan.groupSpecs}), plays some of them with a sampler, judging each
 * group as it comes in ({@link Plan.play}), turns a step's plays into the loop's
 * {@link StepGroups}, and evaluates the trained policy on held-out episodes. One environment
 * (./environment.ts) and an environment mix (./mix.ts) are plans; the schedulers (./sync.ts,
 * ./async.ts) decide when each group is played.
 *
 * @module
 */

import type { HeldOutEvaluation } from "../rundir/mod.ts";
import type { GroupSpec } from "../rollout/mod.ts";
import type { CollectOptions, Sampler } from "../rollout/mod.ts";
import type { EpisodeGroup } from "../rl/types.ts";
import type { RunEvaluationInput, StepGroups } from "../trainer/mod.ts";

/** What a play hands back: at least the groups to train, judged, in spec order. */
export interface PlayedGroups {
  /** The groups to train, judged, in spec order. */
  kept: EpisodeGroup[];
}

/** What a plan's evaluation needs of a finished run (the environment is the plan's own). */
export type PlanEvaluationInput = Omit<RunEvaluationInput, "makeEnv" | "split" | "sampling">;

/**
 * What a run plays and how it judges it. `S` is the plan's group spec, `P` what one play of some
 * specs gives back; schedulers hand a plan's plays back to the same plan.
 */
export interface Plan<S extends GroupSpec = GroupSpec, P extends PlayedGroups = PlayedGroups> {
  /** What it plays, in a few words (an env id, or the mix's names). */
  readonly name: string;
  /** Steps the run trains (a mix's `num_epochs` may set them). */
  readonly steps: number;
  /** The groups step `step` needs, in order; the same every time it is asked (seeded). */
  groupSpecs(step: number): S[];
  /**
   * Plays `specs` with `sampler`, judging each group as it comes in; `onGroup` sees each group
   * kept for training as soon as it is judged.
   */
  play(
    specs: S[],
    sampler: Sampler,
    options: CollectOptions,
    onGroup?: (g: EpisodeGroup) => void,
  ): Promise<P>;
  /** A step's groups from its plays (one collection, or one per group): the loop's input. */
  stepGroups(plays: P[], step: number): Omit<StepGroups, "spans">;
  /** The held-out comparison of the base model and the trained policy. */
  evaluate(i: PlanEvaluationInput): Promise<HeldOutEvaluation>;
}
