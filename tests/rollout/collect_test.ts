import { assert } from "../assert.ts";
import { OpenEnv } from "./open_env.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { ServiceClient } from "../../lib/tinker/mod.ts";
import { ChatMLRenderer } from "../../lib/renderers/chatml.ts";
import { collectGroups, type Episode, type Sampler } from "../../lib/rollout/mod.ts";
import { makeBuiltin } from "../../lib/envs/mod.ts";
import type { AnyEnv, Env, StepResult, SyncEnv } from "../../lib/envs/types.ts";

const renderer = new ChatMLRenderer();
const GAME = "game:GuessTheNumber-v0-easy";

/**
 * GuessTheNumber that records every action it is given and, for the env seeds in `failSeeds`,
 * throws from `step` while the shared `failures.left` budget lasts.
 */
class FlakyEnv implements Env {
  readonly id: string;
  readonly maxTurns: number;
  #seed: number | undefined;
  constructor(
    readonly inner: SyncEnv,
    readonly log: { actions: string[]; failures: { left: number }; failSeeds: Set<number> },
    seed?: number,
  ) {
    this.id = inner.id;
    this.maxTurns = inner.maxTurns;
    this.#seed = seed;
  }
  reset(seed?: number) {
    this.#seed = seed;
    return this.inner.reset(seed);
  }
  step(action: string): StepResult {
    if (this.#seed !== undefined && this.log.failSeeds.has(this.#seed)) {
      if (this.log.failures.left > 0) {
        this.log.failures.left--;
        throw new Error(`injected failure on env seed ${this.#seed}`);
      }
    }
    this.log.actions.push(action);
    return this.inner.step(action);
  }
  spawn(sameState?: boolean): FlakyEnv {
    return new FlakyEnv(this.inner.spawn(sameState), this.log, sameState ? this.#seed : undefined);
  }
}

function flaky(failSeeds: number[] = [], left = 0) {
  const log = { actions: [] as string[], failures: { left }, failSeeds: new Set(failSeeds) };
  return { log, makeEnv: () => new FlakyEnv(makeBuiltin(GAME), log) };
}

/**
 * Wraps the real sampler to count calls in flight and, optionally, hold back the first call
 * until `holdFirst` settles.
 */
function instrumented(inner: Sampler, holdFirst?: Promise<unknown>) {
  const stats = { calls: 0, inFlight: 0, maxInFlight: 0, pending: [] as Promise<unknown>[] };
  const sampler: Sampler = {
    sample(args) {
      const n = stats.calls++;
      stats.inFlight++;
      stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
      const p = (async () => {
        try {
          if (n === 0 && holdFirst) await holdFirst;
          return await inner.sample(args);
        } finally {
          stats.inFlight--;
        }
      })();
      stats.pending.push(p.catch(() => {}));
      return p;
    },
  };
  return { sampler, stats };
}

const specs = (seeds: number[], makeEnv: () => AnyEnv) =>
  seeds.map((envSeed) => ({ makeEnv, envSeed }));

Deno.test("collectGroups on the local backend", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-collect-" });
  const server = await startLocalServer({ dataDir });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  try {
    const real = await service.createSamplingClient({ baseModel: "local/tiny" });

    await t.step("token-aligned groups from one start state, concurrency bounded", async () => {
      const { log, makeEnv } = flaky();
      const { sampler, stats } = instrumented(real);
      const progress: number[] = [];
      const res = await collectGroups(specs([3, 4, 5, 6, 7, 8], makeEnv), sampler, {
        groupSize: 4,
        maxConcurrency: 5,
        maxTokensPerTurn: 12,
        seed: 11,
        onProgress: ({ done, total }) => {
          assert.equal(total, 24);
          progress.push(done);
        },
      });
      assert.deepEqual(progress, Array.from({ length: 24 }, (_, i) => i + 1));
      assert.ok(stats.maxInFlight <= 5, `at most 5 in flight, saw ${stats.maxInFlight}`);
      assert.ok(stats.maxInFlight >= 2, `episodes ran concurrently (saw ${stats.maxInFlight})`);
      assert.deepEqual(res.groups.map((g) => [g.id, g.envSeed]), [
        ["g0", 3],
        ["g1", 4],
        ["g2", 5],
        ["g3", 6],
        ["g4", 7],
        ["g5", 8],
      ]);
      assert.equal(res.retries, 0);
      assert.ok(Object.values(res.dropped).every((n) => n === 0), JSON.stringify(res.dropped));
      const given: string[] = [];
      for (const g of res.groups) {
        assert.equal(g.envId, GAME);
        assert.equal(g.episodes.length, 4);
        const start = renderer.generationPrompt([
          { role: "user", content: makeBuiltin(GAME).reset(g.envSeed!).observation },
        ]);
        for (const ep of g.episodes) {
          assert.deepEqual(ep.turns[0].observationTokens, start, "the group's one start state");
          assert.ok(
            ["completed", "max_turns", "max_tokens", "parse_error"].includes(ep.stopReason),
          );
          assert.equal(ep.attempts, 1);
          for (const [k, turn] of ep.turns.entries()) {
            assert.equal(turn.logprobs.length, turn.actionTokens.length, "a logprob per token");
            assert.ok(turn.actionTokens.length <= 12);
            const end = turn.actionTokens.indexOf(renderer.tokenizer.eosTokenId);
            const body = end >= 0 ? turn.actionTokens.slice(0, end) : turn.actionTokens;
            // The env gets the decoded message (the renderer parses out <think>, tool calls).
            const decoded = renderer.tokenizer.decode(body);
            const parsed = renderer.parseResponse(turn.actionTokens).message.content;
            assert.equal(parsed, turn.action.content, "decoded action");
            if (body.every((id) => id < 256)) assert.equal(decoded, turn.action.content);
            given.push(turn.action.content);
            if (k > 0) {
              const prev = ep.turns[k - 1];
              assert.deepEqual(
                turn.observationTokens.slice(
                  0,
                  prev.observationTokens.length + prev.actionTokens.length,
                ),
                [...prev.observationTokens, ...prev.actionTokens],
                "each turn's prompt extends the last",
              );
            }
          }
        }
        // Distinct sampler seeds within a group: the episodes are not copies of one another.
        assert.equal(new Set(g.episodes.map((e) => e.seed)).size, 4);
      }
      assert.deepEqual(
        [...given].sort(),
        [...log.actions].sort(),
        "action texts are what the env got",
      );
      assert.ok(res.timing.episodesPerSecond > 0 && res.timing.wallMs > 0);
    });

    await t.step(
      "drop_episode: failed episodes leave, a group under the minimum leaves",
      async () => {
        // Seed 2 fails every step: its group has no successful episode.
        let { makeEnv } = flaky([2], Infinity);
        let res = await collectGroups(specs([1, 2, 3], makeEnv), real, {
          groupSize: 3,
          maxTokensPerTurn: 8,
        });
        assert.deepEqual(res.groups.map((g) => g.envSeed), [1, 3]);
        assert.equal(res.dropped.episodeError, 3);
        assert.equal(res.dropped.groupTooFewEpisodes, 1);
        assert.match(res.errors[0].message, /injected failure on env seed 2/);
        // One failure in seed 2's group: 2 episodes left, under a minimum of 3.
        ({ makeEnv } = flaky([2], 1));
        res = await collectGroups(specs([1, 2, 3], makeEnv), real, {
          groupSize: 3,
          maxTokensPerTurn: 8,
          failures: { onError: "drop_episode", minEpisodesPerGroup: 3 },
        });
        assert.deepEqual(res.groups.map((g) => g.envSeed), [1, 3]);
        assert.equal(res.dropped.episodeError, 1);
        assert.equal(res.dropped.groupTooFewEpisodes, 1);
        // Same failure, minimum 2: the group stays with its 2 good episodes.
        ({ makeEnv } = flaky([2], 1));
        res = await collectGroups(specs([1, 2, 3], makeEnv), real, {
          groupSize: 3,
          maxTokensPerTurn: 8,
          failures: { onError: "drop_episode", minEpisodesPerGroup: 2 },
        });
        assert.deepEqual(res.groups.map((g) => g.episodes.length), [3, 2, 3]);
      },
    );

    await t.step("retry: a failed episode is played again with a fresh seed", async () => {
      let { makeEnv } = flaky([2], 2);
      let res = await collectGroups(specs([1, 2, 3], makeEnv), real, {
        groupSize: 3,
        maxTokensPerTurn: 8,
        seed: 5,
        failures: { onError: "retry", maxRetries: 2 },
      });
      assert.deepEqual(res.groups.map((g) => g.episodes.length), [3, 3, 3]);
      assert.equal(res.retries, 2);
      assert.ok(Object.values(res.dropped).every((n) => n === 0));
      const g2 = res.groups[1].episodes;
      assert.equal(g2.reduce((a, e) => a + (e.attempts! - 1), 0), 2);
      assert.equal(new Set(g2.map((e) => e.seed)).size, 3);
      // Retries run out: every episode of seed 2 fails twice, then leaves.
      ({ makeEnv } = flaky([2], Infinity));
      res = await collectGroups(specs([1, 2, 3], makeEnv), real, {
        groupSize: 3,
        maxTokensPerTurn: 8,
        failures: { onError: "retry", maxRetries: 1 },
      });
      assert.equal(res.retries, 3);
      assert.equal(res.dropped.episodeError, 3);
      assert.equal(res.dropped.groupTooFewEpisodes, 1);
      assert.deepEqual(res.groups.map((g) => g.envSeed), [1, 3]);
    });

    await t.step("drop_group: one failure drops its group, the rest is not played", async () => {
      const { makeEnv } = flaky([2], 1);
      const { sampler, stats } = instrumented(real);
      const res = await collectGroups(specs([1, 2, 3], makeEnv), sampler, {
        groupSize: 3,
        maxConcurrency: 1,
        maxTokensPerTurn: 8,
        failures: { onError: "drop_group" },
      });
      assert.deepEqual(res.groups.map((g) => g.envSeed), [1, 3]);
      assert.equal(res.dropped.groupEpisodeFailed, 1);
      assert.equal(res.dropped.episodeError, 1);
      assert.equal(res.dropped.episodeGroupDropped, 2);
      // A group's first turn is one call for all its episodes; later turns one call each.
      const kept = res.groups.flatMap((g) => g.episodes);
      const later = kept.reduce((a, e) => a + e.turns.length - 1, 0);
      assert.equal(stats.calls, 3 + later, "group 2 sampled its first turn only");
    });

    await t.step("a group whose env cannot reset is dropped with its reason", async () => {
      const good = () => makeBuiltin(GAME);
      const res = await collectGroups(
        [{ makeEnv: good, envSeed: 1 }, {
          makeEnv: () => {
            throw new Error("no such board");
          },
          envSeed: 2,
        }],
        real,
        { groupSize: 2, maxTokensPerTurn: 8 },
      );
      assert.deepEqual(res.groups.map((g) => g.id), ["g0"]);
      assert.equal(res.dropped.groupResetError, 1);
      assert.equal(res.dropped.episodeGroupDropped, 0);
      assert.match(res.errors[0].message, /reset failed: no such board/);
    });

    await t.step(
      "timeout: a stuck sample call fails its episode without being waited for",
      async () => {
        // The stuck call is held until the group has returned, so it outlasts the timeout
        // however busy the machine is (checked, not timed). The timeout is wide enough for the
        // other episode's real calls with both cores busy (1.5 s was not load-proof).
        // Groups of one episode: the held first call is one episode's.
        const stuck = Promise.withResolvers<void>();
        const { sampler, stats } = instrumented(real, stuck.promise);
        let res = await collectGroups(specs([1, 2], () => makeBuiltin(GAME)), sampler, {
          groupSize: 1,
          maxConcurrency: 2,
          maxTokensPerTurn: 8,
          timeoutMs: 5000,
        });
        assert.equal(stats.inFlight, 1, "returned before the late result");
        assert.equal(res.dropped.episodeTimeout, 1);
        assert.deepEqual(res.groups.map((g) => g.envSeed), [2]);
        assert.match(res.errors[0].message, /timed out after 5000 ms/);
        stuck.resolve();
        await Promise.all(stats.pending);
        // A group of two: the held first call is the group's first turn, so both episodes time
        // out; with retries each is played again with calls of its own.
        const held = Promise.withResolvers<void>();
        const again = instrumented(real, held.promise);
        res = await collectGroups(specs([1], () => makeBuiltin(GAME)), again.sampler, {
          groupSize: 2,
          maxConcurrency: 2,
          maxTokensPerTurn: 8,
          timeoutMs: 5000,
          failures: { onError: "retry", maxRetries: 1 },
        });
        held.resolve();
        assert.equal(res.retries, 2);
        assert.equal(res.groups[0].episodes.length, 2);
        assert.deepEqual(res.groups[0].episodes.map((e) => e.attempts), [2, 2]);
        await Promise.all(again.stats.pending);
      },
    );

    await t.step(
      "max tokens per episode: the budget caps turns, then stops the episode",
      async () => {
        // An env that takes any text and never ends early: only the budget can stop it.
        const res = await collectGroups(specs([1, 2], () => new OpenEnv(5)), real, {
          groupSize: 4,
          maxTokensPerTurn: 40,
          maxTokensPerEpisode: 3,
          seed: 3,
        });
        const eps: Episode[] = res.groups.flatMap((g) => g.episodes);
        assert.equal(eps.length, 8);
        for (const ep of eps) {
          assert.equal(ep.stopReason, "max_tokens");
          assert.ok(ep.sampledTokens! <= 3, `sampled ${ep.sampledTokens}`);
          assert.equal(ep.sampledTokens, ep.turns.reduce((a, t) => a + t.actionTokens.length, 0));
        }
      },
    );

    await t.step("bad options are one-line errors", async () => {
      await assert.rejects(
        collectGroups(specs([1], () => makeBuiltin(GAME)), real, {
          groupSize: 0,
          maxTokensPerTurn: 8,
        }),
        /collectGroups: groupSize: Too small/,
      );
    });
  } finally {
    service.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
