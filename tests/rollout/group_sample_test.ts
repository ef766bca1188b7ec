import { assert } from "../assert.ts";
import { OpenEnv } from "./open_env.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { ModelInput, type SampleArgs, ServiceClient } from "../../lib/tinker/mod.ts";
import { collectGroups, type Sampler } from "../../lib/rollout/mod.ts";
import { GroupFirstTurn } from "../../lib/rollout/group_sample.ts";
import { makeBuiltin } from "../../lib/envs/mod.ts";
import type { SampleResponse } from "../../lib/protocol/mod.ts";
import { deriveSeed } from "../../lib/util/random.ts";

const ONE_TURN = "debug:EvenFirstByte-v0";
const GAME = "game:GuessTheNumber-v0-easy";

/** Records every sample call's arguments before passing it on. */
function recording(inner: Sampler) {
  const calls: SampleArgs[] = [];
  const sampler: Sampler = {
    sample(args) {
      calls.push(args);
      return inner.sample(args);
    },
  };
  return { sampler, calls };
}

const specs = (env: string, seeds: number[]) =>
  seeds.map((envSeed) => ({ makeEnv: () => makeBuiltin(env), envSeed }));

Deno.test("a group's first turn is one sample request on the local backend", async (t) => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-group-sample-" });
  const server = await startLocalServer({ dataDir });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  try {
    const real = await service.createSamplingClient({ baseModel: "local/tiny" });
    const opts = { groupSize: 4, maxTokensPerTurn: 12, seed: 21 };

    await t.step("one request a group, num_samples = the group's size", async () => {
      const { sampler, calls } = recording(real);
      const res = await collectGroups(specs(ONE_TURN, [1, 2, 3]), sampler, opts);
      assert.equal(res.groups.length, 3);
      assert.equal(calls.length, 3);
      calls.forEach((c, g) => {
        assert.equal(c.numSamples, 4);
        assert.equal(c.samplingParams?.seed, deriveSeed(21, g, -1), "the group's seed");
      });
      for (const g of res.groups) {
        const actions = g.episodes.map((e) => e.turns[0].actionTokens.join(","));
        assert.ok(new Set(actions).size > 1, "a group's episodes are distinct samples");
      }
    });

    await t.step("a seeded collection replays exactly", async () => {
      const play = async (seed: number) => {
        const res = await collectGroups(specs(GAME, [4, 5]), real, { ...opts, seed });
        return res.groups.map((g) =>
          g.episodes.map((e) => e.turns.map((u) => [u.actionTokens, u.logprobs]))
        );
      };
      const a = await play(21), b = await play(21), c = await play(22);
      assert.deepEqual(a, b);
      assert.notDeepEqual(a, c);
    });

    await t.step("episode i's first action is sample i of the group's request", async () => {
      const { sampler, calls } = recording(real);
      const res = await collectGroups(specs(ONE_TURN, [7]), sampler, opts);
      // The request sent again, as recorded: the same samples, in episode order.
      const again = await real.sample(calls[0]);
      assert.deepEqual(
        res.groups[0].episodes.map((e) => e.turns[0].actionTokens),
        again.sequences.map((s) => s.tokens),
      );
    });

    await t.step("later turns are one request an episode", async () => {
      const { sampler, calls } = recording(real);
      const res = await collectGroups(
        [{ makeEnv: () => new OpenEnv(3), envSeed: 8 }],
        sampler,
        opts,
      );
      const turns = res.groups[0].episodes.map((e) => e.turns.length);
      // A reply cut at the token limit ends its episode; seeded, one here plays on.
      assert.ok(turns.some((n) => n > 1), `some episode played on (turns ${turns})`);
      assert.equal(calls.length, 1 + turns.reduce((a, n) => a + n - 1, 0));
      assert.ok(calls.slice(1).every((c) => (c.numSamples ?? 1) === 1));
    });
  } finally {
    service.close();
    await server.close();
  }
});

/** Answers every call with `count` sequences of one token (or `count(args)`). */
function fake(count: (args: SampleArgs) => number) {
  const calls: SampleArgs[] = [];
  const sampler: Sampler = {
    sample(args) {
      calls.push(args);
      const sequences = Array.from({ length: count(args) }, (_, i) => ({
        tokens: [i],
        logprobs: [-1],
        stop_reason: "stop",
      }));
      return Promise.resolve({ sequences } as unknown as SampleResponse);
    },
  };
  return { sampler, calls };
}

const ask = (tokens: number[], seed: number): SampleArgs => ({
  prompt: ModelInput.fromInts(tokens),
  samplingParams: { maxTokens: 4, temperature: 1, seed },
});

Deno.test("GroupFirstTurn: episodes share one request; later calls and other prompts are their own", async () => {
  const { sampler, calls } = fake((a) => a.numSamples ?? 1);
  const first = new GroupFirstTurn(sampler, 3, 99);
  const eps = [0, 1, 2].map((i) => first.episodeSampler(i));
  const got = await Promise.all(eps.map((s, i) => s.sample(ask([1, 2], 10 + i))));
  assert.deepEqual(got.map((r) => r.sequences.map((q) => q.tokens)), [[[0]], [[1]], [[2]]]);
  assert.equal(calls.length, 1);
  assert.equal(calls[0].numSamples, 3);
  assert.equal(calls[0].samplingParams?.seed, 99);
  // An episode's second call goes to the sampler as asked.
  await eps[0].sample(ask([1, 2, 0], 11));
  assert.equal(calls.length, 2);
  assert.equal(calls[1].samplingParams?.seed, 11);
  // An episode whose first prompt differs from the group's is sampled on its own.
  const other = new GroupFirstTurn(sampler, 2, 5);
  await other.episodeSampler(0).sample(ask([1, 2], 1));
  await other.episodeSampler(1).sample(ask([3], 2));
  assert.deepEqual(calls.slice(2).map((c) => [c.numSamples ?? 1, c.samplingParams?.seed]), [
    [2, 5],
    [1, 2],
  ]);
});

Deno.test("GroupFirstTurn: a sampler answering with too few samples fails the episode loudly", async () => {
  const { sampler } = fake(() => 1);
  const first = new GroupFirstTurn(sampler, 2, 1);
  await first.episodeSampler(0).sample(ask([1], 1));
  await assert.rejects(
    async () => await first.episodeSampler(1).sample(ask([1], 2)),
    Error,
    "the sampler answered a request for 2 samples with 1",
  );
});
