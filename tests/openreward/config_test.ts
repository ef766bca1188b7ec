import { assert } from "../assert.ts";
import { ConfigError, loadTrainConfig, type TrainConfig } from "../../lib/config/mod.ts";
import { allocate, EnvironmentMix } from "../../lib/sources/mix.ts";
import { startOrsServer } from "../../lib/openreward/mod.ts";
import { whoDunIt } from "../../lib/envs/whodunit.ts";
import { Rng } from "../../lib/util/random.ts";
import { rejection } from "./fixtures.ts";

const load = (text: string, overrides: string[] = []) =>
  loadTrainConfig({ file: { path: "tinker-config.yaml", text }, overrides });

/** Every top-level key of OpenReward's trainer, with a value other than ours by default. */
const ALL_KEYS = `
wandb_project_name: proj
wandb_run_name: run-1
openreward_run_name: or-run
log_path: runs/x
model_name: Qwen/Qwen3-8B
lora_rank: 8
tokenizer_name: Qwen/Qwen3-4B
resume_from: tinker://abc/weights/checkpoint_000050
max_response_tokens: 512
max_total_tokens: 8192
max_rollout_retries: 4
loss_fn: dro
loss_fn_config: { beta: 0.1 }
advantage_calculation: direct
batch_size: 16
learning_rate: 0.00002
weight_decay: 0.01
num_epochs: 3
save_every: 5
max_active_tasks: 64
max_rollout_concurrency: 12
rollout_timeout: 900
system_prompt_template: "You act.\\n{tools}"
thinking: true
seed: 42
secrets: { openai_api_key: null, other: "x" }
environments:
  Acme/Env:
    splits: { train: { shuffle: false, num_samples: 10 }, test: {} }
    num_rollouts: 8
    max_failing_rollouts: 2
    temperature: 0.5
    top_p: 0.9
    top_k: 20
    reward_reduction: mean
    nonterminal_reward: -0.5
    min_reward: -1
    max_reward: 1
    secrets: { other: "y" }
`;

Deno.test("openreward config: every key of the trainer's YAML lands on its setting", async () => {
  const c = await load(ALL_KEYS);
  const got = {
    logging: c.logging,
    policy: c.policy,
    resume: c.checkpoints.resume_from,
    save: c.checkpoints.save_every,
    optimizer: c.optimizer,
    mode: c.advantages.mode,
    rollout: [
      c.rollout.max_tokens_per_turn,
      c.rollout.max_total_tokens,
      c.rollout.max_retries,
      c.rollout.groups_per_batch,
      c.rollout.max_concurrency,
      c.rollout.timeout_s,
      c.rollout.system_prompt_template,
    ],
    top: [c.num_epochs, c.seed, c.secrets],
  };
  assert.deepEqual(got, {
    logging: {
      log_path: "runs/x",
      project_name: "proj",
      run_name: "run-1",
      openreward_run_name: "or-run",
      use_wandb: null,
    },
    policy: {
      model: "Qwen/Qwen3-8B",
      lora_rank: 8,
      tokenizer: "Qwen/Qwen3-4B",
      thinking: true,
      renderer: null,
    },
    resume: "tinker://abc/weights/checkpoint_000050",
    save: 5,
    optimizer: {
      learning_rate: 2e-5,
      loss_fn: "dro",
      loss_fn_config: { beta: 0.1 },
      train_epochs: 1,
      weight_decay: 0.01,
    },
    mode: "raw",
    // max_active_tasks 64 and max_rollout_concurrency 12: one setting, the lower.
    rollout: [512, 8192, 4, 16, 12, 900, "You act.\n{tools}"],
    top: [3, 42, { openai_api_key: null, other: "x" }],
  });
  assert.deepEqual(c.environments["Acme/Env"], {
    env_id: null,
    base_url: null,
    weight: 1,
    splits: {
      train: { shuffle: false, num_samples: 10 },
      test: { shuffle: true, num_samples: null },
    },
    num_rollouts: 8,
    max_failing_rollouts: 2,
    temperature: 0.5,
    top_p: 0.9,
    top_k: 20,
    reward_reduction: "mean",
    unfinished_reward: -0.5,
    min_reward: -1,
    max_reward: 1,
    max_turns: null,
    secrets: { other: "y" },
  });
  for (
    const [value, mode] of [["centered", "group_centered"], ["centered_normalized", "group_zscore"]]
  ) {
    assert.equal((await load(`advantage_calculation: ${value}\n`)).advantages.mode, mode);
  }
});

Deno.test("openreward config: every validation rule, one line naming the key", async () => {
  const env = (body: string, top = "") => load(`${top}environments:\n  a: { ${body} }\n`);
  const cases: [Promise<unknown>, RegExp][] = [
    [env("num_rollouts: 1"), /^environments\.a\.num_rollouts = 1 .*an integer in \[2, 1024\]/],
    [
      env("num_rollouts: 4, max_failing_rollouts: 3"),
      /^environments\.a\.num_rollouts = 4 .*num_rollouts - max_failing_rollouts must be >= 2 \(4 - 3\)$/,
    ],
    // Without num_rollouts the group size counts.
    [
      env("max_failing_rollouts: 3", "group_size: 4\n"),
      /^environments\.a\.max_failing_rollouts = 3 .*\(4 - 3\)$/,
    ],
    [
      env("max_failing_rollouts: -1"),
      /^environments\.a\.max_failing_rollouts = -1 .*in \[0, 1024\]/,
    ],
    [env("temperature: 2.5"), /^environments\.a\.temperature = 2\.5 .*a number in \[0, 2\]/],
    [env("top_p: 1.5"), /^environments\.a\.top_p = 1\.5 .*a number in \[0, 1\]/],
    [env("top_k: -1"), /^environments\.a\.top_k = -1 .*an integer in \[0, 1000000\]/],
    [
      env("reward_reduction: median"),
      /^environments\.a\.reward_reduction = "median" .*"sum"\|"mean"\|"max"\|"min"/,
    ],
    [
      env("min_reward: 1, max_reward: 0"),
      /^environments\.a\.min_reward = 1 .*must not exceed max_reward$/,
    ],
    [env("num_rolouts: 4"), /^environments\.a = .*Unrecognized key: "num_rolouts"$/],
    [env("splits: { train: { shufle: true } }"), /Unrecognized key: "shufle"$/],
    [
      env("splits: { train: { num_samples: 0 } }"),
      /^environments\.a\.splits\.train\.num_samples = 0 /,
    ],
    [env("base_url: not a url"), /^environments\.a\.base_url = "not a url" /],
    [
      load("wandb_projct_name: x\n"),
      /unknown setting wandb_projct_name \(did you mean wandb_project_name/,
    ],
    [load("advantage_calculation: zscore\n"), /expected direct, centered or centered_normalized$/],
    [load("loss_fn: sgd\n"), /^optimizer\.loss_fn = "sgd" /],
    [load("num_epochs: 0\n"), /^num_epochs = 0 /],
    [load("max_total_tokens: 0\n"), /^rollout\.max_total_tokens = 0 /],
  ];
  for (const [p, re] of cases) {
    const e = await rejection(() => p, ConfigError);
    assert.match(e.message, re);
    assert.ok(!e.message.includes("\n"), e.message);
  }
});

Deno.test("openreward config: --overrides on top of the file, environments included", async () => {
  const c = await load(ALL_KEYS, [
    "batch_size=64",
    "learning_rate=2e-5",
    "environments.Acme/Env.num_rollouts=4",
    "environments.Acme/Env.splits.train.num_samples=3",
  ]);
  assert.equal(c.rollout.groups_per_batch, 64);
  assert.equal(c.optimizer.learning_rate, 2e-5);
  assert.equal(c.environments["Acme/Env"].num_rollouts, 4);
  assert.equal(c.environments["Acme/Env"].splits.train.num_samples, 3);
  // An override must keep the rules.
  await rejection(
    () => load(ALL_KEYS, ["environments.Acme/Env.max_failing_rollouts=7"]),
    ConfigError,
    "num_rollouts - max_failing_rollouts must be >= 2",
  );
});

Deno.test("openreward config: the example configs load", async () => {
  for (const name of ["openreward-single.yaml", "openreward-multi.yaml"]) {
    const path = new URL(`../../configs/${name}`, import.meta.url).pathname;
    const c = await loadTrainConfig({ file: { path } });
    assert.ok(Object.keys(c.environments).length >= 1, name);
  }
});

async function mixOf(text: string): Promise<EnvironmentMix> {
  return (await EnvironmentMix.open((await load(text)) as TrainConfig))!;
}

Deno.test("mix: environment names resolve to the registry, an ORS server, or hosted OpenReward", async () => {
  const server = await startOrsServer({ environments: [whoDunIt("easy")] });
  try {
    const mix = await mixOf(`
seed: 1
environments:
  game:GuessTheNumber-v0-easy: {}
  tool:WordProblems-v0: { splits: { test: {} } }
  whodunit-v0-easy: { base_url: ${server.url}, splits: { train: { num_samples: 50 } } }
`);
    assert.deepEqual(mix.environments.map((e) => [e.name, e.source, e.pools[0].size]), [
      ["game:GuessTheNumber-v0-easy", "registry", Infinity],
      ["tool:WordProblems-v0", "tool", 1000],
      ["whodunit-v0-easy", "ors", 50],
    ]);
    // Mistakes are one line naming the entry.
    const bad = async (text: string, includes: string) =>
      await rejection(() => mixOf(text), ConfigError, includes);
    await bad("environments:\n  nope: {}\n", 'environments.nope: "nope" is not a registered');
    await bad(
      `environments:\n  nope: { base_url: ${server.url} }\n`,
      'environments.nope.splits.train: environment "nope" is not served at',
    );
    await bad(
      "environments:\n  game:GuessTheNumber-v0-easy: { splits: { test: {} } }\n",
      "has only a train split",
    );
    await bad(
      `environments:\n  whodunit-v0-easy: { base_url: ${server.url}, splits: { dev: {} } }\n`,
      "whodunit-v0-easy.splits.dev: whodunit-v0-easy: /whodunit-v0-easy/num_tasks: HTTP 400: Invalid split",
    );
    await bad(
      "secrets: { tb_no_such_secret: null }\nenvironments:\n  tool:WordProblems-v0: {}\n",
      "secret tb_no_such_secret is null and TB_NO_SUCH_SECRET is not set",
    );
    const key = Deno.env.get("OPENREWARD_API_KEY");
    Deno.env.delete("OPENREWARD_API_KEY");
    try {
      await bad("environments:\n  Acme/Env: {}\n", "needs a key: set OPENREWARD_API_KEY");
    } finally {
      if (key) Deno.env.set("OPENREWARD_API_KEY", key);
    }
  } finally {
    await server.close();
  }
});

Deno.test("mix: each step splits groups by weight and draws distinct tasks, the same on a rerun", async () => {
  assert.deepEqual(allocate(6, [1, 1, 1], new Rng(1)), [2, 2, 2]);
  assert.deepEqual(allocate(5, [3, 1, 0.000001], new Rng(1)), [4, 1, 0]);
  const total = allocate(7, [1, 1], new Rng(2));
  assert.equal(total[0] + total[1], 7);
  const text = `
seed: 5
batch_size: 6
environments:
  tool:WordProblems-v0: { weight: 2, splits: { train: { num_samples: 4 } } }
  tool:WhoDunIt-v0-easy: { weight: 1, num_rollouts: 3, temperature: 0.3 }
`;
  const a = (await mixOf(text)).groupSpecs(3), b = (await mixOf(text)).groupSpecs(3);
  const view = (specs: typeof a) => specs.map((s) => [s.tags![0], s.envSeed, s.groupSize]);
  assert.deepEqual(view(a), view(b), "a function of (seed, step)");
  const words = a.filter((s) => s.tags![0] === "tool:WordProblems-v0");
  assert.equal(words.length, 4);
  assert.equal(new Set(words.map((s) => s.envSeed)).size, 4, "distinct tasks in a step");
  const mystery = a.filter((s) => s.tags![0] === "tool:WhoDunIt-v0-easy");
  assert.deepEqual(mystery.map((s) => [s.groupSize, s.sampling?.temperature]), [[3, 0.3], [
    3,
    0.3,
  ]]);
  // num_samples: only 4 word problems are ever drawn.
  const seen = new Set<number>();
  const mix = await mixOf(text);
  for (let step = 1; step <= 20; step++) {
    for (const s of mix.groupSpecs(step)) {
      if (s.tags![0] === "tool:WordProblems-v0") seen.add(s.envSeed);
    }
  }
  assert.equal(seen.size, 4);
  // num_epochs: passes over the task groups (4 + 100,000 tasks, 6 per step).
  const epochs = await mixOf(`${text}num_epochs: 2\nmax_steps: 1\n`);
  assert.equal(epochs.steps, 2 * Math.floor(100_004 / 6));
});

Deno.test("train script: --config_path (OpenReward's spelling) loads the file; a broken rule is one line", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tb-orcfg-" });
  const path = `${dir}/tinker-config.yaml`;
  await Deno.writeTextFile(path, "environments:\n  tool:WordProblems-v0: { num_rollouts: 1 }\n");
  const script = new URL("../../scripts/train.ts", import.meta.url).pathname;
  const run = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      script,
      "--config_path",
      path,
      "--overrides",
      "batch_size=64",
      "learning_rate=2e-5",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const err = new TextDecoder().decode(run.stderr);
  assert.equal(run.code, 2, err);
  assert.match(
    err,
    /^error: environments\.tool:WordProblems-v0\.num_rollouts = 1 \(from config file .*tinker-config\.yaml\): out of range: environments\.tool:WordProblems-v0\.num_rollouts is an integer in \[2, 1024\], or null$/m,
  );
});
