import { assert } from "../assert.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { ServiceClient } from "../../lib/tinker/mod.ts";
import { make } from "../../lib/envs/mod.ts";
import { collectGroups } from "../../lib/rollout/mod.ts";
import { episodeTurnTokens } from "../../lib/datums/mod.ts";
import { trajectoryToDatums } from "../../lib/datums/mod.ts";
import { logprobGap, samplerLearnerPairs } from "../../lib/viz/mod.ts";

Deno.test("samplerLearnerPairs: on the local backend, sampler and learner agree before a step", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-viz-" });
  const server = await startLocalServer({ dataDir });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  try {
    const training = await service.createLoraTrainingClient({ baseModel: "local/tiny", rank: 4 });
    const sampler = await training.saveWeightsAndGetSamplingClient();
    const { groups } = await collectGroups(
      [{ makeEnv: () => make("game:GuessTheNumber-v0-easy"), envSeed: 1 }],
      sampler,
      { groupSize: 2, maxTokensPerTurn: 8, seed: 5 },
    );
    const episodes = groups[0].episodes;
    const datums = episodes.flatMap((e) => trajectoryToDatums(episodeTurnTokens(e, -0.1)));
    const out = await training.forward(datums, "importance_sampling");
    const pairs = samplerLearnerPairs(datums, out);
    const sampled = episodes.reduce(
      (n, e) => n + e.turns.reduce((a, t) => a + t.actionTokens.length, 0),
      0,
    );
    assert.equal(pairs.sampler.length, sampled, "one pair per sampled token");
    assert.ok(pairs.advantage.every((a) => a === -0.1));
    assert.deepEqual(pairs.sampler, episodes.flatMap((e) => e.turns.flatMap((t) => t.logprobs)));
    const gap = logprobGap(pairs.sampler, pairs.learner);
    assert.ok(
      gap.max_abs_diff < 1e-3,
      `same weights, same log-probs (max diff ${gap.max_abs_diff})`,
    );
    assert.throws(() => samplerLearnerPairs(datums.slice(1), out), /1 datums but 2 outputs/);
  } finally {
    service.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
