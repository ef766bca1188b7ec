import { assert } from "../assert.ts";
import { make, registerToolEnvironment, ToolTaskEnv } from "../../lib/envs/mod.ts";
import { OrsClient, startOrsServer } from "../../lib/openreward/mod.ts";
import { whoDunIt } from "../../lib/envs/whodunit.ts";
import { collectGroups } from "../../lib/rollout/mod.ts";
import { probeEnvironment, scriptedPolicy } from "./fixtures.ts";
import { detective } from "../../lib/envs/whodunit_detective.ts";

Deno.test("ors rollout: groups over HTTP equal the same environment in process, sessions released", async () => {
  const server = await startOrsServer({ environments: [whoDunIt("easy")] });
  try {
    const client = new OrsClient({ baseUrl: server.url });
    const remote = await collectGroups(
      [3, 8].map((envSeed) => ({
        makeEnv: () => new ToolTaskEnv(client.environment("whodunit-v0-easy"), { maxTurns: 20 }),
        envSeed,
      })),
      scriptedPolicy(detective),
      { groupSize: 3, maxTokensPerTurn: 400, maxConcurrency: 4 },
    );
    const local = await collectGroups(
      [3, 8].map((envSeed) => ({ makeEnv: () => make("tool:WhoDunIt-v0-easy"), envSeed })),
      scriptedPolicy(detective),
      { groupSize: 3, maxTokensPerTurn: 400, maxConcurrency: 4 },
    );
    assert.equal(remote.groups.length, 2);
    for (const [g, group] of remote.groups.entries()) {
      for (const [e, ep] of group.episodes.entries()) {
        const twin = local.groups[g].episodes[e];
        assert.equal(ep.totalReward, 1);
        assert.equal(ep.stopReason, "completed");
        assert.deepEqual(
          ep.turns.map((t) => t.actionTokens),
          twin.turns.map((t) => t.actionTokens),
        );
        assert.deepEqual(
          ep.turns.map((t) => t.observationTokens),
          twin.turns.map((t) => t.observationTokens),
        );
      }
    }
    // One session per episode (the reset's session went to the first episode), all deleted.
    assert.equal(server.app.sessions.stats.created, 6);
    assert.equal(server.app.sessions.stats.ended, 6);
    assert.equal(server.app.sessions.open, 0);
  } finally {
    await server.close();
  }
});

Deno.test("ors rollout: a failing environment fails its episodes, which the policy drops", async () => {
  const server = await startOrsServer({ environments: [probeEnvironment()] });
  try {
    const client = new OrsClient({ baseUrl: server.url, retry: { baseDelayMs: 5 } });
    const res = await collectGroups(
      [{ makeEnv: () => new ToolTaskEnv(client.environment("probe")), envSeed: 0 }],
      scriptedPolicy(() => '<tool_call>\n{"name": "boom", "arguments": {}}\n</tool_call>'),
      { groupSize: 2, maxTokensPerTurn: 100, failures: { onError: "drop_episode" } },
    );
    assert.equal(res.groups.length, 0);
    assert.equal(res.dropped.episodeError, 2);
    assert.match(res.errors[0].message, /^probe: \/probe\/call failed: kaboom$/);
    assert.equal(server.app.sessions.open, 0, "failed episodes release their sessions too");
  } finally {
    await server.close();
  }
});

Deno.test("ors rollout: a user's TypeScript tool environment is registered and served", async () => {
  const env = { ...probeEnvironment(), name: "probe-user" };
  registerToolEnvironment("custom:Probe-v0", env);
  const played = make("custom:Probe-v0") as ToolTaskEnv;
  assert.equal((await played.reset(1)).messages[0].content, "Task train/1.");
  await played.close();
  const server = await startOrsServer({ environments: [env] });
  try {
    const client = new OrsClient({ baseUrl: server.url });
    assert.deepEqual(await client.listEnvironments(), ["probe-user"]);
  } finally {
    await server.close();
  }
});
