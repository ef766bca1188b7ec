import { assert } from "../assert.ts";
import {
  ConfigError,
  type ConfigSources,
  listConfigFields,
  loadTrainConfig,
} from "../../lib/config/mod.ts";
import { rolloutSettings } from "../../lib/trainer/prepare.ts";

const file = (text: string) => loadTrainConfig({ file: { path: "run.yaml", text } });
const refused = async (p: Promise<unknown>, pattern: RegExp) =>
  await assert.rejects(p, (e: Error) => e instanceof ConfigError && pattern.test(e.message));

Deno.test("names: advantages.non_final_turn_reward, and each of its old names", async () => {
  for (
    const c of [
      await loadTrainConfig({ overrides: ["advantages.non_final_turn_reward=0"] }),
      await loadTrainConfig({ overrides: ["advantages.non_terminal_reward=0"] }),
      await loadTrainConfig({ overrides: ["advantages.nonTerminalReward=0"] }),
      await file("advantages: { non_terminal_reward: 0 }"),
      await loadTrainConfig({ flags: { "advantages.non-terminal-reward": "0" } }),
      await loadTrainConfig({ env: { TINKERBENCH_ADVANTAGES__NON_TERMINAL_REWARD: "0" } }),
    ]
  ) assert.equal(c.advantages.non_final_turn_reward, 0);
  await refused(
    file("advantages: { non_terminal_reward: 0, non_final_turn_reward: 1 }"),
    /both set advantages.non_final_turn_reward/,
  );
});

Deno.test("names: environments.*.unfinished_reward, and OpenReward's nonterminal_reward", async () => {
  const now = await file("environments: { a: { unfinished_reward: -1 } }");
  assert.equal(now.environments.a.unfinished_reward, -1);
  const old = await file("environments: { a: { nonterminal_reward: -1 }, b: {} }");
  assert.equal(old.environments.a.unfinished_reward, -1);
  assert.equal(old.environments.b.unfinished_reward, null);
  assert.ok(!("nonterminal_reward" in old.environments.a));
  const over = await loadTrainConfig({
    overrides: ["environments.a.nonterminal_reward=-0.5", "environments.b.unfinished_reward=-2"],
  });
  assert.equal(over.environments.a.unfinished_reward, -0.5);
  assert.equal(over.environments.b.unfinished_reward, -2);
  const flag = await loadTrainConfig({
    flags: { environments: '{"a": {"nonterminal_reward": 0}}' },
  });
  assert.equal(flag.environments.a.unfinished_reward, 0);
  await refused(
    file("environments: { a: { nonterminal_reward: 0, unfinished_reward: 1 } }"),
    /environments.a: nonterminal_reward and unfinished_reward both set/,
  );
  const field = listConfigFields().find((f) => f.path === "environments.<name>.unfinished_reward")!;
  assert.deepEqual(field.aliases, ["environments.<name>.nonterminal_reward"]);
});

Deno.test("names: one concurrency setting, as every seed names it", async () => {
  for (
    const [sources, n] of [
      [{ flags: { "max-concurrency": "5" } }, 5],
      [{ flags: { "rollout.max-concurrency": "5" } }, 5],
      [{ overrides: ["num_env=6"] }, 6],
      [{ overrides: ["max_active_tasks=7"] }, 7],
      [{ overrides: ["max_rollout_concurrency=8"] }, 8],
      [{ overrides: ["concurrency_limit=9"] }, 9],
      [{ overrides: ["rollout.concurrency_limit=10"] }, 10],
      [{ env: { TINKERBENCH_NUM_ENV: "11" } }, 11],
    ] as Array<[ConfigSources, number]>
  ) {
    const c = await loadTrainConfig(sources);
    assert.equal(c.rollout.max_concurrency, n, JSON.stringify(sources));
    assert.equal(
      rolloutSettings(c).collect.maxConcurrency,
      n,
      "the description is what the trainer does",
    );
  }
  // OpenReward's trainer splits the limit over two keys: given together, the lower.
  const both = (a: unknown, b: unknown) =>
    file(`max_active_tasks: ${a}\nmax_rollout_concurrency: ${b}\n`);
  assert.equal((await both(64, 12)).rollout.max_concurrency, 12);
  assert.equal((await both(8, 12)).rollout.max_concurrency, 8);
  assert.equal((await both(32, null)).rollout.max_concurrency, 32, "null: no limit");
  // A config.json of an earlier version (both fields) still loads.
  const recorded = (limit: unknown) =>
    file(`rollout: { max_concurrency: 32, concurrency_limit: ${limit} }`);
  assert.equal((await recorded(null)).rollout.max_concurrency, 32);
  assert.equal((await recorded(8)).rollout.max_concurrency, 8);
  // null is "unset" only under a name that once took it.
  await refused(
    loadTrainConfig({ overrides: ["max_active_tasks=null"] }),
    /^rollout.max_concurrency = not a number \(from --overrides max_active_tasks=null\)/,
  );
  // Two names that are not one seed's split limit are still one setting given twice.
  await refused(
    loadTrainConfig({ overrides: ["num_env=4", "max_active_tasks=8"] }),
    /num_env and max_active_tasks both set rollout.max_concurrency/,
  );
  // The later source still overrides: a flag over the file's pair.
  const over = await loadTrainConfig({
    file: { path: "r.yaml", text: "max_active_tasks: 64\nmax_rollout_concurrency: 12\n" },
    flags: { "max-concurrency": "40" },
  });
  assert.equal(over.rollout.max_concurrency, 40);
});

Deno.test("names: scoring.rl_reward and scoring.opd_hint, once both *_source", async () => {
  for (
    const c of [
      await loadTrainConfig({
        flags: { "scoring.rl-reward": "success", "scoring.opd-hint": "judge" },
      }),
      await loadTrainConfig({ flags: { "reward-source": "success", "hint-source": "judge" } }),
      await file("scoring: { reward_source: success, hint_source: judge }"),
      await file("reward_source: success\nhint_source: judge\n"),
    ]
  ) {
    assert.equal(c.scoring.rl_reward, "success");
    assert.equal(c.scoring.opd_hint, "judge");
  }
  const paths = listConfigFields().map((f) => f.path);
  assert.ok(!paths.some((p) => p.endsWith("_source")), "no setting is called a source");
});
