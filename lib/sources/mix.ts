/**
 * Multi-environment training, as OpenReward's trainer does it: the config's `environments:` map
 * names each environment (./mix_environments.ts), its splits, group size (`num_rollouts`), sampling and
 * reward settings. Each step splits the batch's task groups among the environments by `weight`,
 * plays them, shapes each episode's reward by its environment's rules (lib/advantages/shaping.ts;
 * the reward travels with the episode as `Episode.shapedReward`), leaves out a group with more than
 * `max_failing_rollouts` failed episodes (dropping the failures of the others) and constant
 * groups (the shaping module's rule), recorded with the reason, and reports metrics per
 * environment. Draws are functions of (seed, step), so a resumed run draws what it would have.
 * The mix is a plan (./plan.ts): in `sync` and `stream` modes (./sync.ts) a step's groups are
 * played in one collection; in `async` mode (./async.ts) group by group, judged alike.
 *
 * @module
 */

import type { HeldOutEvaluation } from "../rundir/mod.ts";
import type { TrainConfig } from "../config/mod.ts";
import { ConfigError } from "../config/errors.ts";
import type { OrsClient } from "../openreward/client.ts";
import { isConstantGroup } from "../advantages/shaping.ts";
import { episodeReward } from "../openreward/rewards.ts";
import type { Episode, EpisodeGroup } from "../rl/types.ts";
import {
  collectGroups,
  type CollectOptions,
  type CollectResult,
  type GroupSpec,
  type Sampler,
} from "../rollout/mod.ts";
import { type ExcludedGroup, rolloutMetrics, type StepGroups } from "../trainer/mod.ts";
import { deriveSeed, Rng } from "../util/random.ts";
import { type GroupOutcome, mixMetrics } from "./mix_metrics.ts";
import { type MixEnvironment, resolveEnvironment, type TaskPool } from "./mix_environments.ts";
import { collectionMetrics, failedEpisodes, groupId } from "./collection.ts";
import { evaluateMixRun } from "./mix_evaluate.ts";
import type { Plan, PlanEvaluationInput } from "./plan.ts";

export type { MixEnvironment } from "./mix_environments.ts";

/** The mix's settings from the run's config, read once when it opens. */
interface MixSettings {
  seed: number;
  groupsPerBatch: number;
  /** Passes over the task groups (`num_epochs`); null: `maxSteps` steps. */
  numEpochs: number | null;
  maxSteps: number;
}

/** A group spec of the mix: which environment it plays. */
export type MixGroupSpec = GroupSpec & { env: MixEnvironment };

/** The environments of a run's `environments:` map, with their tasks: a plan. */
export class EnvironmentMix implements Plan<MixGroupSpec, MixPlay> {
  /** The mix's environments, resolved. */
  readonly environments: MixEnvironment[];
  readonly #s: MixSettings;

  private constructor(s: MixSettings, environments: MixEnvironment[]) {
    this.#s = s;
    this.environments = environments;
  }

  /**
   * Resolves every environment and counts its tasks; a mistake (an unknown name, an ORS server
   * that does not serve it, a missing key or secret) is a {@link ConfigError} naming the entry.
   * Null when the config has no environments.
   *
   * @example
   * const mix = await EnvironmentMix.open(cfg);
   * mix?.groupSpecs(1); // step 1's groups
   */
  static async open(cfg: TrainConfig): Promise<EnvironmentMix | null> {
    const entries = Object.entries(cfg.environments);
    if (entries.length === 0) return null;
    const s: MixSettings = {
      seed: cfg.seed,
      groupsPerBatch: cfg.rollout.groups_per_batch,
      numEpochs: cfg.num_epochs,
      maxSteps: cfg.max_steps,
    };
    const clients = new Map<string, OrsClient>();
    const envs = await Promise.all(
      entries.map(([name, entry], e) => resolveEnvironment(cfg, name, entry, e, clients)),
    );
    return new EnvironmentMix(s, envs);
  }

  /** The environments' names, joined. */
  get name(): string {
    return this.environments.map((e) => e.name).join(" + ");
  }

  /** Steps of the run: `num_epochs` passes over the task groups, else `max_steps`. */
  get steps(): number {
    const epochs = this.#s.numEpochs;
    if (epochs === null) return this.#s.maxSteps;
    const tasks = this.environments.flatMap((e) => e.pools).reduce((n, p) => n + p.size, 0);
    if (!Number.isFinite(tasks)) {
      throw new ConfigError(
        "num_epochs: an environment without a task list (a registry game) has no epochs; set " +
          "its splits' num_samples, or use max_steps",
      );
    }
    return Math.max(1, epochs * Math.floor(tasks / this.#s.groupsPerBatch));
  }

  /**
   * The step's task groups: split among environments in proportion to their weights (largest
   * remainders, ties broken at random per step), tasks drawn without repeats within a step.
   */
  groupSpecs(step: number): MixGroupSpec[] {
    const { seed, groupsPerBatch } = this.#s;
    const counts = allocate(
      groupsPerBatch,
      this.environments.map((e) => e.weight),
      new Rng(deriveSeed(seed, step, -7)),
    );
    const specs: MixGroupSpec[] = [];
    this.environments.forEach((env, e) => {
      const draws = new Rng(deriveSeed(seed, step, e, -8));
      for (const [split, task] of drawTasks(env.pools, counts[e], draws)) {
        const g = specs.length;
        specs.push({
          env,
          makeEnv: env.makeEnv(split),
          envSeed: task,
          groupSize: env.groupSize,
          id: groupId(step, g),
          tags: [env.name, split],
          seedIndex: g,
          sampling: env.sampling,
        });
      }
    });
    return specs;
  }

  /**
   * A played group by its environment's rules: the kept group (its failures dropped, each kept
   * episode's shaped reward set on it as `Episode.shapedReward`) or null when it is left out, and
   * what happened, for metrics and the rollout store.
   */
  judge(
    spec: MixGroupSpec,
    g: EpisodeGroup | null,
  ): { kept: EpisodeGroup | null; outcome: GroupOutcome } {
    const env = spec.env;
    const scored = (g?.episodes ?? []).map((e) => ({ e, r: episodeReward(e, env.rewards) }));
    const ok = scored.filter((x) => x.r !== null && (x.e.sampledTokens ?? 0) > 0);
    const failed = env.groupSize - ok.length;
    let excluded: GroupOutcome["excluded"] = null;
    if (ok.length === 0 || failed > env.maxFailingRollouts) excluded = "failing";
    else if (ok.length > 1 && isConstantGroup(ok.map((x) => x.r!))) excluded = "constant";
    const outcome = { env: env.name, episodes: scored, failed, excluded };
    if (excluded) return { kept: null, outcome };
    const episodes: Episode[] = ok.map((x) => ({ ...x.e, shapedReward: x.r! }));
    return { kept: { ...g!, episodes }, outcome };
  }

  /**
   * Plays specs with the mix's failure policy (every group comes back, so that its failures
   * count against its environment), judging each group as it is played; `onGroup` sees kept
   * groups as they are judged.
   */
  async play(
    specs: MixGroupSpec[],
    sampler: Sampler,
    options: CollectOptions,
    onGroup?: (g: EpisodeGroup) => void,
  ): Promise<MixPlay> {
    const byId = new Map(specs.map((s) => [s.id!, s]));
    const outcomes = new Map<string, GroupOutcome>();
    const keptById = new Map<string, EpisodeGroup>();
    const res = await collectGroups(specs, sampler, {
      ...options,
      failures: { ...options.failures!, minEpisodesPerGroup: 0 },
      onGroup: (g) => {
        const { kept: k, outcome } = this.judge(byId.get(g.id)!, g);
        outcomes.set(g.id, outcome);
        if (k) {
          keptById.set(g.id, k);
          onGroup?.(k);
        }
      },
    });
    // A group never announced (its reset failed, or drop_group dropped it) failed whole.
    for (const s of specs) {
      if (!outcomes.has(s.id!)) outcomes.set(s.id!, this.judge(s, null).outcome);
    }
    const kept = specs.flatMap((s) => keptById.get(s.id!) ?? []);
    return { specs, res, outcomes, keptById, kept };
  }

  /**
   * A step's groups from its plays (one collection, or one per group in async mode): kept groups
   * in spec order, excluded ones with their reasons, failed episodes, and the step's metrics.
   */
  stepGroups(plays: MixPlay[], step: number): Omit<StepGroups, "spans"> {
    const specs = plays.flatMap((p) => p.specs);
    const outcomes = new Map(plays.flatMap((p) => [...p.outcomes]));
    const kept = new Map(plays.flatMap((p) => [...p.keptById]));
    const played = new Map(plays.flatMap((p) => p.res.groups.map((g) => [g.id, g] as const)));
    const groups = specs.flatMap((s) => kept.get(s.id!) ?? []);
    const excluded: ExcludedGroup[] = specs.flatMap((s) => {
      const o = outcomes.get(s.id!)!;
      if (!o.excluded) return [];
      const group = played.get(s.id!) ??
        { id: s.id!, envId: s.env.name, envSeed: s.envSeed, tags: s.tags ?? [], episodes: [] };
      return [{ group, reason: excludedReason(o, s.env) }];
    });
    const results = plays.map((p) => p.res);
    const sum = (f: (r: CollectResult) => number) => results.reduce((a, r) => a + f(r), 0);
    return {
      groups,
      excluded,
      failed: plays.flatMap((p) => failedEpisodes(p.res, p.specs)),
      metrics: {
        ...collectionMetrics(results, groups, step),
        // Episode metrics per environment over every group played, left out or not.
        ...rolloutMetrics([...played.values()]),
        ...mixMetrics(specs.map((s) => outcomes.get(s.id!)!)),
        num_timed_out: sum((r) => r.dropped.episodeTimeout),
        num_errors: sum((r) => r.dropped.episodeError),
      },
    };
  }

  /** Held-out episodes per environment, and over all (./mix_evaluate.ts). */
  async evaluate(i: PlanEvaluationInput): Promise<HeldOutEvaluation> {
    return await evaluateMixRun({ ...i, environments: this.environments });
  }
}

/** One collection of the mix's specs, judged group by group. */
export interface MixPlay {
  /** The specs played. */
  specs: MixGroupSpec[];
  /** What the collection gave. */
  res: CollectResult;
  /** Each group's outcome, by group id. */
  outcomes: Map<string, GroupOutcome>;
  /** The kept groups, by group id. */
  keptById: Map<string, EpisodeGroup>;
  /** The kept groups in spec order. */
  kept: EpisodeGroup[];
}

/** Why a group was left out, in the words of its environment's settings. */
function excludedReason(o: GroupOutcome, env: MixEnvironment): string {
  return o.excluded === "constant"
    ? "constant reward (every episode of the group had the same reward)"
    : `failing: ${o.failed} of ${env.groupSize} episodes failed (max_failing_rollouts ${env.maxFailingRollouts})`;
}

/** `total` split in proportion to `weights`: floors, then the largest remainders (random ties). */
export function allocate(total: number, weights: number[], rng: Rng): number[] {
  const sum = weights.reduce((a, b) => a + b, 0);
  const quotas = weights.map((w) => (total * w) / sum);
  const counts = quotas.map(Math.floor);
  const order = weights.map((_, i) => ({ i, frac: quotas[i] - counts[i], tie: rng.uniform() }))
    .sort((a, b) => b.frac - a.frac || a.tie - b.tie);
  let left = total - counts.reduce((a, b) => a + b, 0);
  for (const { i } of order) {
    if (left-- <= 0) break;
    counts[i]++;
  }
  return counts;
}

/** `count` distinct tasks over the pools (drawn as from their concatenation). */
function drawTasks(pools: TaskPool[], count: number, rng: Rng): [string, number][] {
  const size = pools.reduce((n, p) => n + p.size, 0);
  const out: [string, number][] = [];
  if (!Number.isFinite(size)) {
    // A seed-driven environment (one split): fresh seeds.
    for (let i = 0; i < count; i++) out.push([pools[0].split, rng.nextU32() % 2 ** 31]);
    return out;
  }
  // A partial Fisher-Yates over positions, kept sparse: large pools are not copied.
  const swapped = new Map<number, number>();
  for (let i = 0; i < count; i++) {
    const k = i % size; // more groups than tasks: start over
    if (k === 0 && i > 0) swapped.clear();
    const j = k + rng.int(size - k);
    const pick = swapped.get(j) ?? j;
    swapped.set(j, swapped.get(k) ?? k);
    let p = pick;
    for (const pool of pools) {
      if (p < pool.size) {
        out.push([pool.split, pool.at(p)]);
        break;
      }
      p -= pool.size;
    }
  }
  return out;
}
