/**
 * The environments of a run's `environments:` map, resolved: a registry id (in process; a tool
 * environment's tasks by split, a text environment's by seed), an ORS server's environment
 * (`base_url`), or `Org/Env` on hosted OpenReward; each split's tasks shuffled with the seed and
 * cut to `num_samples`; secrets with nulls read from the environment. Mistakes are one-line
 * {@link ConfigError}s naming the entry.
 *
 * @module
 */

import type { TrainConfig } from "../config/mod.ts";
import { ConfigError } from "../config/errors.ts";
import { listEnvs, listToolEnvironments, make } from "../envs/registry.ts";
import { localTasks, type TaskProvider, ToolTaskEnv } from "../envs/tool_task_env.ts";
import type { AnyEnv } from "../envs/types.ts";
import type { GroupSpec } from "../rollout/mod.ts";
import { OrsClient } from "../openreward/client.ts";
import { OrsError } from "../openreward/errors.ts";
import type { RewardSettings } from "../openreward/rewards.ts";
import { deriveSeed, Rng } from "../util/random.ts";
import { type HeldOutSplit, heldOutSplit } from "../trainer/mod.ts";

/** An entry of the `environments:` map. */
export type EnvironmentEntry = TrainConfig["environments"][string];

/** Tasks of one split: `size` of them (Infinity for seed-driven environments). */
export interface TaskPool {
  /** The split. */
  split: string;
  /** Its number of tasks. */
  size: number;
  /** The task index (or, for a seed-driven environment, the seed) at a position. */
  at(i: number): number;
}

/** One environment of the mix, resolved. */
export interface MixEnvironment {
  /** Its name in the config (metrics are `env/<name>/...`). */
  name: string;
  /** Its share of each step's groups (`weight`). */
  weight: number;
  /** Its own sampling settings (unset ones fall back to the run's). */
  sampling: NonNullable<GroupSpec["sampling"]>;
  /** How its episodes' rewards are shaped (reduction, unfinished reward, clamps). */
  rewards: RewardSettings;
  /** Failed episodes a group may have and still train (`max_failing_rollouts`). */
  maxFailingRollouts: number;
  /** Where its episodes come from. */
  source: "registry" | "tool" | "ors" | "hosted";
  /** Episodes per group. */
  groupSize: number;
  /** Its task pools, by split. */
  pools: TaskPool[];
  /**
   * Where its held-out episodes come from: the split it trains on when its episodes come from
   * seeds (held-out seeds are tasks it never drew), else a split of its task list it does not
   * train on; null, with the reason, when every split is trained on.
   */
  heldOut: HeldOutSplit;
  /** Makes its environment on a split. */
  makeEnv(split: string): () => AnyEnv;
}

/** Above this many tasks a split's shuffle is an affine permutation, not an array. */
const MATERIALIZE = 2_000_000;

/**
 * Resolves one entry to its source and task pools; ORS clients are shared by base URL.
 *
 * @example
 * const env = await resolveEnvironment(cfg, "tool:WordProblems-v0", cfg.environments["tool:WordProblems-v0"], 0, new Map());
 */
export async function resolveEnvironment(
  cfg: TrainConfig,
  name: string,
  entry: EnvironmentEntry,
  index: number,
  clients: Map<string, OrsClient>,
): Promise<MixEnvironment> {
  const where = `environments.${name}`;
  const groupSize = entry.num_rollouts ?? cfg.rollout.group_size;
  const secrets = resolveSecrets(where, { ...cfg.secrets, ...(entry.secrets ?? {}) });
  const id = entry.env_id ?? name;
  const tool = listToolEnvironments()[id];
  let provider: TaskProvider | null = null;
  let source: MixEnvironment["source"];
  try {
    if (entry.base_url) {
      source = "ors";
      const client = clients.get(entry.base_url) ?? new OrsClient({ baseUrl: entry.base_url });
      clients.set(entry.base_url, client);
      provider = client.environment(entry.env_id ?? name, { secrets });
    } else if (tool) {
      source = "tool";
      provider = localTasks(tool, secrets);
    } else if (listEnvs().includes(id)) {
      source = "registry";
    } else if (name.includes("/")) {
      source = "hosted";
      provider = new OrsClient().environment(name, { secrets });
    } else {
      throw new ConfigError(
        `${where}: ${JSON.stringify(id)} is not a registered environment; give base_url for an ` +
          "ORS server, or Org/Env (with OPENREWARD_API_KEY) for OpenReward",
      );
    }
  } catch (e) {
    if (e instanceof OrsError) throw new ConfigError(`${where}: ${e.message}`);
    throw e;
  }
  const seeds = (split: string, size: number) => ({
    split,
    size,
    at: (i: number) => deriveSeed(cfg.seed, index, i),
  });
  const pools: TaskPool[] = [];
  for (const [split, s] of Object.entries(entry.splits)) {
    if (!provider) {
      if (split !== "train") {
        throw new ConfigError(
          `${where}.splits: ${id} draws its episodes from seeds and has only a train split`,
        );
      }
      pools.push(seeds(split, s.num_samples ?? Infinity));
      continue;
    }
    let n: number;
    try {
      n = await provider.numTasks(split);
    } catch (e) {
      const msg = (e as Error).message;
      throw new ConfigError(`${where}.splits.${split}: ${msg}`);
    }
    pools.push(taskPool(split, n, s, new Rng(deriveSeed(cfg.seed, index, -9, pools.length))));
  }
  const p = provider;
  let heldOut: MixEnvironment["heldOut"] = { split: "train", from: "seeds" };
  if (p) {
    try {
      heldOut = await heldOutSplit(p, Object.keys(entry.splits));
    } catch (e) {
      if (!(e instanceof OrsError)) throw e;
      throw new ConfigError(`${where}: listing its splits: ${e.message}`);
    }
  }
  return {
    name,
    weight: entry.weight,
    sampling: mixSampling(entry),
    rewards: {
      reward_reduction: entry.reward_reduction,
      unfinished_reward: entry.unfinished_reward,
      min_reward: entry.min_reward,
      max_reward: entry.max_reward,
    },
    maxFailingRollouts: entry.max_failing_rollouts,
    source,
    groupSize,
    pools,
    heldOut,
    makeEnv: (split) =>
      p
        ? () =>
          new ToolTaskEnv(p, {
            id: tool ? id : name,
            split,
            maxTurns: entry.max_turns ?? undefined,
          })
        : () => make(id),
  };
}

/** A split's tasks: shuffled with the seed when asked, the first `num_samples` kept. */
function taskPool(
  split: string,
  n: number,
  s: { shuffle: boolean; num_samples: number | null },
  rng: Rng,
): TaskPool {
  const size = Math.min(n, s.num_samples ?? n);
  if (!s.shuffle) return { split, size, at: (i) => i };
  if (n <= MATERIALIZE) {
    const order = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [order[i], order[j]] = [order[j], order[i]];
    }
    order.length = size;
    return { split, size, at: (i) => order[i] };
  }
  // i ↦ (a·i + b) mod n with a coprime to n: a permutation without an array.
  let a = 1 + rng.int(n - 1);
  while (gcd(a, n) !== 1) a = (a % (n - 1)) + 1;
  const b = rng.int(n);
  return { split, size, at: (i) => Number((BigInt(a) * BigInt(i) + BigInt(b)) % BigInt(n)) };
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** Secrets with nulls read from the environment (`openai_api_key` → `OPENAI_API_KEY`). */
function resolveSecrets(where: string, secrets: Record<string, string | null>) {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(secrets)) {
    const value = v ?? Deno.env.get(k.toUpperCase());
    if (value === undefined) {
      throw new ConfigError(
        `${where}: secret ${k} is null and ${k.toUpperCase()} is not set in the environment`,
      );
    }
    out[k] = value;
  }
  return out;
}

/** A mix entry's own sampling settings (unset ones fall back to the run's). */
export function mixSampling(entry: EnvironmentEntry): NonNullable<GroupSpec["sampling"]> {
  return {
    temperature: entry.temperature ?? undefined,
    topP: entry.top_p ?? undefined,
    topK: entry.top_k ? entry.top_k : undefined,
  };
}
