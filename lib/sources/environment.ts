/**
 * The plan of a run on one environment (`rollout.env_id`): each step plays
 * `rollout.groups_per_batch` groups of it (the run's resolved {@link RolloutSettings}), with env seeds from (seed, step, group), and trains
 * every group the rollout kept; the held-out evaluation plays the same environment (a task
 * list's held-out split).
 *
 * @module
 */

import type { HeldOutEvaluation } from "../rundir/mod.ts";
import type { AnyEnv } from "../envs/types.ts";
import {
  collectGroups,
  type CollectOptions,
  type CollectResult,
  type GroupSpec,
  type Sampler,
  stepSeeds,
} from "../rollout/mod.ts";
import type { EpisodeGroup } from "../rl/types.ts";
import {
  evaluateRun,
  heldOutEnvironment,
  type RolloutSettings,
  type StepGroups,
} from "../trainer/mod.ts";
import { collectionMetrics, failedEpisodes, groupId } from "./collection.ts";
import type { Plan, PlanEvaluationInput } from "./plan.ts";

/** One collection of an environment's groups. */
export interface EnvironmentPlay {
  /** The specs played. */
  specs: GroupSpec[];
  /** What the collection gave. */
  res: CollectResult;
  /** The groups kept, in spec order. */
  kept: EpisodeGroup[];
}

/**
 * One environment as a plan.
 *
 * @example
 * const plan = new EnvironmentPlan(prepared.rollouts, prepared.steps, prepared.makeEnv!);
 * plan.groupSpecs(1); // step 1's groups
 */
export class EnvironmentPlan implements Plan<GroupSpec, EnvironmentPlay> {
  /** The groups of `steps` steps of the environment `makeEnv` makes, with `rollouts` settings. */
  constructor(
    readonly rollouts: RolloutSettings,
    readonly steps: number,
    readonly makeEnv: () => AnyEnv,
  ) {}

  get name(): string {
    return this.rollouts.envId;
  }

  groupSpecs(step: number): GroupSpec[] {
    const seeds = stepSeeds(this.rollouts.seed, step);
    return Array.from({ length: this.rollouts.groupsPerBatch }, (_, g) => ({
      makeEnv: this.makeEnv,
      envSeed: seeds.envSeed(g),
      id: groupId(step, g),
      seedIndex: g,
    }));
  }

  async play(
    specs: GroupSpec[],
    sampler: Sampler,
    options: CollectOptions,
    onGroup?: (g: EpisodeGroup) => void,
  ): Promise<EnvironmentPlay> {
    const res = await collectGroups(specs, sampler, { ...options, onGroup });
    return { specs, res, kept: res.groups };
  }

  stepGroups(plays: EnvironmentPlay[], step: number): Omit<StepGroups, "spans"> {
    const groups = plays.flatMap((p) => p.kept);
    return {
      groups,
      failed: plays.flatMap((p) => failedEpisodes(p.res, p.specs, this.rollouts.envId)),
      metrics: collectionMetrics(plays.map((p) => p.res), groups, step),
    };
  }

  async evaluate(i: PlanEvaluationInput): Promise<HeldOutEvaluation> {
    return await evaluateRun({ ...i, ...await heldOutEnvironment(this.makeEnv) });
  }
}
