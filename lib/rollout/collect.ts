/**
 * Rollout collection: many GRPO groups played at once over one sampling client, with a bound
 * on episodes in flight (the server batches concurrent sample calls, so throughput grows with
 * it), per-episode limits (turns, tokens per turn and per episode, wall time) and a policy for
 * failed rollouts (drop the episode, retry it with a fresh seed, or drop its group).
 *
 * @module
 */

import { z } from "zod";
import { asMessageEnv } from "../envs/message_env.ts";
import type { AnyEnv, MessageEnv } from "../envs/types.ts";
import type { Message, Renderer } from "../renderers/types.ts";
import type { Episode, EpisodeGroup } from "../rl/types.ts";
import { deriveSeed } from "../util/random.ts";
import { formatZodError } from "../util/zod.ts";
import { runEpisode, type Sampler, type ToolUseOptions } from "./episode.ts";
import { GroupFirstTurn } from "./group_sample.ts";

/** One group to play: a fresh env from `makeEnv`, reset with `envSeed`. */
export interface GroupSpec {
  /** Makes the group's environment (one per episode). */
  makeEnv: () => AnyEnv;
  /** The seed every episode of the group resets with. */
  envSeed: number;
  /** The group's id (default `g<index>`), kept on its {@link EpisodeGroup}. */
  id?: string;
  /** Labels kept on the group, e.g. the environment's name in a mix. */
  tags?: string[];
  /**
   * The group's index in sampler seeding (default: its position in the specs): a group played
   * alone (the async trainer collects one at a time) samples as it would among its step's.
   */
  seedIndex?: number;
  /** Episodes of this group (default: the collection's `groupSize`). */
  groupSize?: number;
  /** Sampling of this group's episodes, over the collection's (per-environment settings). */
  sampling?: { temperature?: number; topP?: number; topK?: number };
}

/** What to do with an episode that failed (stop reason "error", timeouts included). */
export interface FailurePolicy {
  /**
   * `drop_episode`: leave it out of its group. `retry`: play it again from the same start state
   * with a fresh sampler seed, up to `maxRetries` times, then leave it out. `drop_group`: leave
   * out the whole group (its episodes not yet finished are stopped).
   */
  onError: "drop_episode" | "retry" | "drop_group";
  /** Retries per episode under `retry` (default 2). */
  maxRetries?: number;
  /** A group with fewer successful episodes is dropped (default 1). */
  minEpisodesPerGroup?: number;
}

/** Options of {@link collectGroups}. */
export interface CollectOptions {
  /** Episodes per group, all from the group's one start state. */
  groupSize: number;
  /** Most episodes in flight at once (default 32). */
  maxConcurrency?: number;
  /** Sampling limit per turn (the sample call's `maxTokens`). */
  maxTokensPerTurn: number;
  /** At most this many turns per episode (default: the env's own limit). */
  maxTurns?: number;
  /** Action tokens per episode; an episode that runs out stops with "max_tokens". */
  maxTokensPerEpisode?: number;
  /** Wall-clock limit per episode (per attempt); past it the episode fails as a timeout. */
  timeoutMs?: number;
  /** Sampling temperature (default 1). */
  temperature?: number;
  /**
   * Base sampler seed, so runs repeat and retries differ. A group's first turn is one request
   * for all its episodes (./group_sample.ts), seeded from (seed, g, -1): episode i's first
   * action is its sample i. Its later turns, and every turn of a retry, are seeded from
   * (seed, g, i, attempt). Without it the server picks seeds.
   */
  seed?: number;
  /** Failed-rollout policy (default: drop the episode, keep groups with at least one). */
  failures?: FailurePolicy;
  /** The chat format of the policy (default: ChatML over the sampler's tokenizer). */
  renderer?: Renderer;
  /** Called each time an episode slot is settled (kept, dropped or skipped). */
  onProgress?: (progress: { done: number; total: number }) => void;
  /** The sampler's version, recorded on every turn (see `Turn.samplerVersion`). */
  samplerVersion?: number;
  /**
   * Called with each kept group as soon as its last episode settles (streamed minibatches
   * train on groups before the whole collection is done).
   */
  onGroup?: (group: EpisodeGroup) => void;
  /** Nucleus and top-k sampling (default: off). */
  topP?: number;
  /** Top-k sampling (default: off). */
  topK?: number;
  /** Tokens per episode's whole conversation, prompt included (see `RolloutOptions`). */
  maxTotalTokens?: number;
  /** How environments that declare tools are played. */
  toolUse?: ToolUseOptions;
  /**
   * Stops the collection (Ctrl-C): episodes in flight end as errors, no new one starts, and the
   * result holds what finished; the caller decides what a partial collection is worth.
   */
  signal?: AbortSignal;
}

/** What was left out, by reason. */
export interface DroppedCounts {
  /** Failed episodes left out (env or sampler errors, after any retries). */
  episodeError: number;
  /** Episodes left out because they ran past `timeoutMs` (after any retries). */
  episodeTimeout: number;
  /** Episodes not played, or stopped, because their group was already dropped. */
  episodeGroupDropped: number;
  /** Groups whose env could not be made or reset. */
  groupResetError: number;
  /** Groups left out under `drop_group` because one of their episodes failed. */
  groupEpisodeFailed: number;
  /** Groups with fewer than `minEpisodesPerGroup` successful episodes. */
  groupTooFewEpisodes: number;
}

/** Wall time and throughput of a collection. */
export interface CollectTiming {
  /** Wall time of the collection, in ms. */
  wallMs: number;
  /** Kept episodes per second of wall time. */
  episodesPerSecond: number;
  /** Mean and max wall time of the kept episodes. */
  meanEpisodeMs: number;
  /** The longest kept episode's wall time, in ms. */
  maxEpisodeMs: number;
}

/** What {@link collectGroups} returns. */
export interface CollectResult {
  /** Kept groups, in spec order, each with its kept episodes in episode order. */
  groups: EpisodeGroup[];
  /** What was left out, by reason. */
  dropped: DroppedCounts;
  /** Episodes played again under the `retry` policy. */
  retries: number;
  /** The first failures' messages (at most 20, retried attempts included). */
  errors: { groupIndex: number; episodeIndex?: number; attempt?: number; message: string }[];
  /**
   * Every episode that failed for good (after its retries), and every group whose reset failed
   * (no episode index): what the rollout store records as failed.
   */
  failed: { groupIndex: number; episodeIndex?: number; message: string }[];
  /** Wall time and throughput. */
  timing: CollectTiming;
}

const OptionsSchema = z.object({
  groupSize: z.number().int().min(1),
  maxConcurrency: z.number().int().min(1),
  maxTokensPerTurn: z.number().int().min(1),
  maxTurns: z.number().int().min(1).optional(),
  maxTokensPerEpisode: z.number().int().min(1).optional(),
  timeoutMs: z.number().positive().optional(),
  temperature: z.number().min(0).optional(),
  seed: z.number().int().optional(),
  samplerVersion: z.number().int().min(0).optional(),
  topP: z.number().gt(0).max(1).optional(),
  topK: z.number().int().min(-1).optional(),
  maxTotalTokens: z.number().int().min(1).optional(),
  failures: z.object({
    onError: z.enum(["drop_episode", "retry", "drop_group"]),
    maxRetries: z.number().int().min(0).optional(),
    minEpisodesPerGroup: z.number().int().min(0).optional(),
  }),
});

const MAX_ERRORS = 20;

interface GroupState {
  spec: GroupSpec;
  env?: MessageEnv;
  opening?: Message[];
  /** Kept episodes by episode index. */
  kept: (Episode | undefined)[];
  dropped: boolean;
  abort: AbortController;
  /** Episode slots settled so far. */
  settled: number;
  /** The first turn of the group's episodes, one request (groups of 2 episodes or more). */
  firstTurn?: GroupFirstTurn;
}

/**
 * Plays `groupSize` episodes for every group spec, at most `maxConcurrency` at a time, over
 * one sampler. Each group's env is made and reset once; its episodes play copies made with
 * `spawn(true)`, so they share the start state. Their first turn is one sample request with
 * `num_samples` = the group's size (./group_sample.ts). Episodes are scheduled group by group,
 * so early groups finish first.
 *
 * @example
 * const { groups, dropped } = await collectGroups(
 *   seeds.map((envSeed) => ({ makeEnv: () => make("game:GuessTheNumber-v0-easy"), envSeed })),
 *   sampler,
 *   { groupSize: 8, maxTokensPerTurn: 32, failures: { onError: "retry", maxRetries: 1 } },
 * );
 */
export async function collectGroups(
  specs: GroupSpec[],
  sampler: Sampler,
  opts: CollectOptions,
): Promise<CollectResult> {
  const parsed = OptionsSchema.safeParse({
    ...opts,
    maxConcurrency: opts.maxConcurrency ?? 32,
    failures: opts.failures ?? { onError: "drop_episode" },
    renderer: undefined,
    onProgress: undefined,
    onGroup: undefined,
    toolUse: undefined,
  });
  if (!parsed.success) throw new Error(`collectGroups: ${formatZodError(parsed.error)}`);
  const o = parsed.data;
  const policy = {
    onError: o.failures.onError,
    maxRetries: o.failures.onError === "retry" ? o.failures.maxRetries ?? 2 : 0,
    minEpisodesPerGroup: o.failures.minEpisodesPerGroup ?? 1,
  };
  const started = performance.now();
  const dropped: DroppedCounts = {
    episodeError: 0,
    episodeTimeout: 0,
    episodeGroupDropped: 0,
    groupResetError: 0,
    groupEpisodeFailed: 0,
    groupTooFewEpisodes: 0,
  };
  const errors: CollectResult["errors"] = [];
  const noteError = (e: CollectResult["errors"][number]) => {
    if (errors.length < MAX_ERRORS) errors.push(e);
  };
  const failed: CollectResult["failed"] = [];
  let retries = 0;
  const sizes = specs.map((s) => s.groupSize ?? o.groupSize);
  const total = sizes.reduce((a, b) => a + b, 0);
  let done = 0;
  const finished: (EpisodeGroup | undefined)[] = Array(specs.length).fill(undefined);
  // A group is decided once all its slots settle: kept (and announced) or dropped.
  const finishGroup = (g: number) => {
    const st = states[g];
    if (st.dropped) return;
    const episodes = st.kept.filter((e): e is Episode => e !== undefined);
    if (episodes.length < policy.minEpisodesPerGroup) {
      dropped.groupTooFewEpisodes++;
      return;
    }
    finished[g] = {
      id: st.spec.id ?? `g${g}`,
      envId: st.env!.id,
      envSeed: st.spec.envSeed,
      tags: st.spec.tags ?? [],
      episodes,
    };
    opts.onGroup?.(finished[g]!);
  };
  const settle = (g: number) => {
    done++;
    opts.onProgress?.({ done, total });
    if (++states[g].settled === sizes[g]) finishGroup(g);
  };

  const states: GroupState[] = specs.map((spec, g) => ({
    spec,
    kept: Array(sizes[g]).fill(undefined),
    dropped: false,
    abort: new AbortController(),
    settled: 0,
    ...(sizes[g] > 1
      ? {
        firstTurn: new GroupFirstTurn(
          sampler,
          sizes[g],
          o.seed === undefined ? undefined : deriveSeed(o.seed, spec.seedIndex ?? g, -1),
        ),
      }
      : {}),
  }));
  // Resets run concurrently: an environment's reset may be a network call.
  await Promise.all(states.map(async (st, g) => {
    try {
      st.env = asMessageEnv(st.spec.makeEnv());
      st.opening = (await st.env.reset(st.spec.envSeed)).messages;
    } catch (e) {
      st.env = undefined;
      st.dropped = true;
      dropped.groupResetError++;
      const message = `reset failed: ${(e as Error).message}`;
      noteError({ groupIndex: g, message });
      failed.push({ groupIndex: g, message });
    }
  }));

  const playSlot = async (g: number, i: number): Promise<void> => {
    const st = states[g];
    if (st.dropped) {
      if (st.env) dropped.episodeGroupDropped++;
      return settle(g);
    }
    for (let attempt = 0;; attempt++) {
      let ep: Episode;
      try {
        // A retry plays on its own: the group's first request is spent.
        const own = attempt === 0 && st.firstTurn ? st.firstTurn.episodeSampler(i) : sampler;
        ep = await runEpisode(st.env!.spawn(true), st.opening!, own, {
          maxTokensPerTurn: o.maxTokensPerTurn,
          maxTurns: o.maxTurns,
          maxTokensPerEpisode: o.maxTokensPerEpisode,
          timeoutMs: o.timeoutMs,
          temperature: st.spec.sampling?.temperature ?? o.temperature,
          topP: st.spec.sampling?.topP ?? o.topP,
          topK: st.spec.sampling?.topK ?? o.topK,
          maxTotalTokens: o.maxTotalTokens,
          toolUse: opts.toolUse,
          seed: o.seed === undefined
            ? undefined
            : deriveSeed(o.seed, st.spec.seedIndex ?? g, i, attempt),
          renderer: opts.renderer,
          signal: st.abort.signal,
          samplerVersion: o.samplerVersion,
        });
      } catch (e) {
        // spawn() failed: the episode never started.
        ep = {
          envId: st.env!.id,
          turns: [],
          totalReward: 0,
          stopReason: "error",
          error: `spawn failed: ${(e as Error).message}`,
        };
      }
      ep.attempts = attempt + 1;
      if (st.dropped) {
        // The group was dropped while this episode played (it was aborted or finished late).
        dropped.episodeGroupDropped++;
        return settle(g);
      }
      if (ep.stopReason !== "error") {
        st.kept[i] = ep;
        return settle(g);
      }
      noteError({ groupIndex: g, episodeIndex: i, attempt, message: ep.error ?? "unknown error" });
      if (attempt < policy.maxRetries) {
        retries++;
        continue;
      }
      if (ep.timedOut) dropped.episodeTimeout++;
      else dropped.episodeError++;
      failed.push({ groupIndex: g, episodeIndex: i, message: ep.error ?? "unknown error" });
      if (policy.onError === "drop_group") {
        st.dropped = true;
        dropped.groupEpisodeFailed++;
        st.abort.abort(new Error("episode stopped: its group was dropped"));
      }
      return settle(g);
    }
  };

  // A fixed pool of workers pulls episode slots group by group: at most maxConcurrency in flight.
  const slots = states.flatMap((_, g) =>
    Array.from({ length: sizes[g] }, (_, i) => [g, i] as const)
  );
  let next = 0;
  const stop = () => states.forEach((st) => st.abort.abort(new Error("collection stopped")));
  opts.signal?.addEventListener("abort", stop, { once: true });
  const worker = async () => {
    while (next < slots.length && !opts.signal?.aborted) {
      const [g, i] = slots[next++];
      await playSlot(g, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(o.maxConcurrency, slots.length) }, worker));
  opts.signal?.removeEventListener("abort", stop);
  // The reset copies may still hold what reset opened (an Open Reward session nobody stepped).
  await Promise.all(states.map((st) => Promise.resolve(st.env?.close?.()).catch(() => {})));

  const groups = finished.filter((g): g is EpisodeGroup => g !== undefined);
  const wallMs = performance.now() - started;
  const kept = groups.flatMap((gr) => gr.episodes);
  const durations = kept.map((e) => e.durationMs ?? 0);
  return {
    groups,
    dropped,
    retries,
    errors,
    failed,
    timing: {
      wallMs,
      episodesPerSecond: wallMs > 0 ? kept.length / (wallMs / 1000) : 0,
      meanEpisodeMs: durations.length ? durations.reduce((a, b) => a + b, 0) / durations.length : 0,
      maxEpisodeMs: durations.length ? Math.max(...durations) : 0,
    },
  };
}
