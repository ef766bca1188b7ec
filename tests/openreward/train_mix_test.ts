import { join } from "node:path";
import { z } from "zod";
import { assert } from "../assert.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { ServiceClient } from "../../lib/tinker/mod.ts";
import { loadTrainConfig } from "../../lib/config/mod.ts";
import { train, type TrainResult } from "../../lib/train/mod.ts";
import { heldOutLine } from "../../lib/rundir/mod.ts";
import { readJsonl } from "../../lib/rundir/mod.ts";
import { heldOutSplit } from "../../lib/trainer/mod.ts";
import { localTasks } from "../../lib/envs/tool_task_env.ts";
import { type Env, register } from "../../lib/envs/mod.ts";
import { type OrsServer, startOrsServer } from "../../lib/openreward/mod.ts";
import {
  defineTool,
  seededTasks,
  textBlock,
  textOutput,
  type ToolEnvironment,
  toolSession,
} from "../../lib/envs/tool_env.ts";

/** A one-turn task a random model gets right half the time: groups have mixed rewards. */
class EvenFirstByte implements Env {
  readonly id = "test:EvenFirstByteMix-v0";
  readonly maxTurns = 1;
  reset() {
    return { observation: "Say anything.", info: {} };
  }
  step(action: string) {
    const even = new TextEncoder().encode(action)[0] % 2 === 0;
    return {
      observation: "ok",
      reward: even ? 1 : 0,
      terminated: true,
      truncated: false,
      info: {},
    };
  }
  spawn(): Env {
    return new EvenFirstByte();
  }
}
register("test:EvenFirstByteMix-v0", () => new EvenFirstByte());

/** A tool environment small enough for local/tiny's 256-token context. */
const FLIP = defineTool(
  "flip",
  "Flip.",
  z.object({}),
  () => textOutput("heads", { reward: 1, finished: true }),
);
const coin: ToolEnvironment = {
  name: "coin",
  description: "Flip a coin",
  ...seededTasks({ train: 10, test: 10 }, 1),
  tools: [FLIP.spec],
  open: () => toolSession([textBlock("Flip.")], [FLIP.bind(null)]),
};

/** OpenReward's trainer config, its keys verbatim; one environment in process, one over ORS. */
const yaml = (orsUrl: string) => `
wandb_project_name: tinkerbench-tests
wandb_run_name: mix
openreward_run_name: mix
log_path: /tmp/unused-by-the-test
model_name: local/tiny
lora_rank: 4
max_response_tokens: 8
max_total_tokens: 250
max_rollout_retries: 1
loss_fn: importance_sampling
loss_fn_config: {}
advantage_calculation: centered
batch_size: 4
learning_rate: 0.01
weight_decay: 0.0
num_epochs: null
save_every: 10
max_active_tasks: 16
max_rollout_concurrency: 8
rollout_timeout: 120
thinking: false
system_prompt_template: "Tools:\\n{tools}"
seed: 3
secrets:
  some_token: abc
environments:
  test:EvenFirstByteMix-v0:
    num_rollouts: 4
    max_failing_rollouts: 1
  coin:
    base_url: ${orsUrl}
    splits:
      test: { shuffle: true, num_samples: 20 }
    num_rollouts: 2
    temperature: 0.7
    top_p: 0.95
    max_turns: 2
    nonterminal_reward: 0.0
    reward_reduction: sum
    secrets: { other: xyz }
`;

/** Trains the mix of the config above with `overrides`, on a local backend and ORS server. */
async function trainMix(
  overrides: string[],
  check: (r: { result: TrainResult; logDir: string; ors: OrsServer }) => Promise<void>,
): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-mix-" });
  const backend = await startLocalServer({ dataDir });
  const ors = await startOrsServer({ environments: [coin] });
  const service = await ServiceClient.connect({ baseUrl: backend.url, apiKey: "tml-local" });
  try {
    const config = await loadTrainConfig({
      file: { path: "tinker-config.yaml", text: yaml(ors.url) },
      overrides,
    });
    const logDir = await Deno.makeTempDir({ prefix: "tb-mix-run-" });
    await check({ result: await train(config, { service, logDir }), logDir, ors });
  } finally {
    service.close();
    await ors.close();
    await backend.close();
  }
}

Deno.test("mix: two environments (registry and ORS), two steps on the local backend, metrics per environment", async () => {
  await trainMix(["max_steps=2"], async ({ result, logDir, ors }) => {
    assert.equal(result.steps, 2);
    const rows = (await readJsonl(join(logDir, "metrics.jsonl"))) as Record<string, number>[];
    assert.equal(rows.length, 2);
    for (const row of rows) {
      for (const env of ["test:EvenFirstByteMix-v0", "coin"]) {
        for (const k of ["mean", "min", "max", "std", "count"]) {
          assert.ok(`rollout/env/${env}/reward/${k}` in row, `rollout/env/${env}/reward/${k}`);
        }
        assert.ok(`env/${env}/reward/total` in row, `env/${env}/reward/total`);
        assert.equal(row[`env/${env}/groups`], 2, "groups split by weight: 2 + 2");
        assert.ok(`env/${env}/tool_calls_per_episode` in row);
      }
      // The random policy never calls the tool: every coin episode ends unfinished with the
      // non-terminal reward 0, so those groups are constant and left out.
      assert.equal(row["rollout/env/coin/reward/mean"], 0);
      assert.equal(row["rollout/env/coin/reward/count"], 4);
      assert.equal(row["env/coin/excluded_groups"], 2);
      // An even-byte group is left out too when its 4 episodes agree (1 in 8 by chance).
      const even = row["env/test:EvenFirstByteMix-v0/excluded_groups"];
      assert.ok(even === 0 || even === 1, `even-byte groups left out: ${even}`);
      assert.equal(row["excluded_groups/constant_reward"], 2 + even);
      assert.equal(row.num_groups + row.num_excluded_groups, 4);
      assert.ok(row["train/datums"] > 0, "the even-byte groups train");
    }
    // Every ORS session was closed: one per group (reset's, taken over by its first episode;
    // the others open theirs only at a first tool call, which never came), then one per
    // held-out episode, base and trained.
    assert.equal(ors.app.sessions.open, 0);
    assert.equal(ors.app.sessions.stats.created, 4 + 2 * result.evaluation!.episodes);
    // Secrets never reach config.json.
    const written = JSON.parse(await Deno.readTextFile(join(logDir, "config.json")));
    assert.deepEqual(written.secrets, { some_token: "***" });
    assert.deepEqual(written.environments.coin.secrets, { other: "***" });
    assert.equal(written.advantages.mode, "group_centered");
    assert.equal(
      written.rollout.max_concurrency,
      8,
      "the lower of max_active_tasks and max_rollout_concurrency",
    );
    // Held out per environment: the seeded one plays held-out seeds; the task list, trained on
    // its test split, plays its train split.
    const evaluation = result.evaluation!;
    assert.equal(evaluation.env_id, "mix:test:EvenFirstByteMix-v0+coin");
    const even = evaluation.environments!["test:EvenFirstByteMix-v0"];
    assert.ok("base" in even && even.base.episodes === evaluation.episodes);
    assert.equal(even.split, undefined);
    const coinEval = evaluation.environments!.coin;
    assert.ok("base" in coinEval && coinEval.split === "train");
    assert.equal(coinEval.trained.episodes, evaluation.episodes);
    assert.equal(evaluation.trained.episodes, 2 * evaluation.episodes);
    assert.match(
      heldOutLine(evaluation),
      /^held-out success: base .* per environment\); test:Even[^;]*: base .*; coin \(train split\): base /,
    );
    // The rollout store keeps every trajectory, tagged with its environment.
    const stored = await readJsonl(join(logDir, "rollouts", "iteration_000001.jsonl"));
    assert.ok(stored.length > 0);
  });
});

Deno.test("mix: async execution trains two steps; excluded groups are stored with their reason", async () => {
  await trainMix(["max_steps=2", "pipeline.mode=async"], async ({ result, logDir }) => {
    assert.equal(result.steps, 2);
    const rows = (await readJsonl(join(logDir, "metrics.jsonl"))) as Record<string, number>[];
    assert.deepEqual(rows.map((r) => r.step), [1, 2]);
    for (const row of rows) {
      assert.equal(row["env/coin/excluded_groups"], 2);
      const even = row["env/test:EvenFirstByteMix-v0/excluded_groups"];
      assert.ok(even === 0 || even === 1, `even-byte groups left out: ${even}`);
      assert.equal(row["excluded_groups/total"], 2 + even);
      assert.ok(row["train/datums"] > 0, "the even-byte groups train");
    }
    for (const step of [1, 2]) {
      const stored = (await readJsonl(
        join(logDir, "rollouts", `iteration_00000${step}.jsonl`),
      )) as { group_kept: boolean; excluded_reason?: string; tags: string[] }[];
      const excluded = stored.filter((r) => r.excluded_reason?.startsWith("constant reward"));
      const coin = excluded.filter((r) => r.tags[0] === "coin");
      assert.equal(coin.length, 4, "2 coin groups of 2 episodes, each with its reason");
      // And each even-byte group of the metrics' count: 4 episodes, each with its reason.
      const even = rows[step - 1]["env/test:EvenFirstByteMix-v0/excluded_groups"];
      assert.equal(excluded.length - coin.length, 4 * even);
      assert.ok(excluded.every((r) => !r.group_kept));
      assert.ok(stored.some((r) => r.group_kept), "the trained groups are there too");
    }
  });
});

Deno.test("mix: a task list is held out on a split it does not train on, a test split first; none when it trains on all", async () => {
  const tasks = localTasks(coin);
  assert.deepEqual(await heldOutSplit(tasks, ["train"]), { split: "test", from: "tasks" });
  assert.deepEqual(await heldOutSplit(tasks, ["test"]), { split: "train", from: "tasks" });
  assert.deepEqual(await heldOutSplit(tasks, ["train", "test"]), {
    skipped: "trains on every split it has (train, test): no held-out tasks",
  });
});
