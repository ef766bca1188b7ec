import { join } from "node:path";
import { assert } from "../assert.ts";
import {
  advantageConfig,
  ConfigError,
  EnvironmentEntrySchema,
  loadTrainConfig,
  resolveLearningRate,
  TrainConfigSchema,
} from "../../lib/config/mod.ts";
import { RunLog } from "../../lib/trainer/run_log.ts";

Deno.test("config: defaults are the seeds' defaults, nested by concern", async () => {
  const c = await loadTrainConfig();
  assert.equal(c.scoring.method, "rl");
  assert.equal(c.policy.model, "local/games2");
  assert.equal(c.policy.lora_rank, 32);
  assert.equal(c.advantages.gamma, 0.9);
  assert.equal(c.advantages.mode, "group_centered");
  assert.equal(c.judge.votes, 3);
  assert.equal(c.rollout.groups_per_batch, 4);
  assert.equal(c.checkpoints.save_every, 20);
  assert.equal(c.optimizer.loss_fn, "importance_sampling");
  assert.deepEqual(c.optimizer.loss_fn_config, {});
  assert.equal(c.proxy, null, "no proxy unless asked for");
  assert.deepEqual(c.environments, {});
});

Deno.test("config: precedence is defaults < file < env < flags < overrides", async () => {
  const file = {
    path: "run.yaml",
    text: [
      "optimizer:",
      "  learning_rate: 0.001",
      "lora_rank: 8",
      "scoring: { w_opd: 0.5, w_rl: 0.75 }",
      "max_steps: 7",
      "seed: 5",
      "advantages:",
      "  mode: raw",
    ].join("\n"),
  };
  const c = await loadTrainConfig({
    file,
    env: {
      OPENCLAW_COMBINE_W_OPD: "0.25",
      TINKERBENCH_LORA_RANK: "16",
      TINKERBENCH_SEED: "6",
      KL_LOSS_COEF: "0.02",
      UNRELATED: "x",
      MAX_STEPS: "99", // OpenClaw's generic names are read only with the TINKERBENCH_ prefix
      TINKERBENCH_HOME: "/tmp/local-backend",
    },
    flags: { "lora-rank": "4", method: "combine", "eval-mode": true, "scoring.w-rl": "2" },
    overrides: ["advantages.mode=batch_zscore", "max_steps=9"],
  });
  assert.equal(c.optimizer.learning_rate, 0.001, "file");
  assert.equal(c.seed, 6, "env beats file");
  assert.equal(c.scoring.w_opd, 0.25, "OpenClaw's env var beats the file");
  assert.equal(c.scoring.kl_loss_coef, 0.02, "OpenClaw's env var");
  assert.equal(c.policy.lora_rank, 4, "flag beats env and file");
  assert.equal(c.scoring.w_rl, 2, "a path flag beats the file");
  assert.equal(c.scoring.method, "combine");
  assert.equal(c.scoring.eval_mode, true);
  assert.equal(c.max_steps, 9, "override beats file; bare MAX_STEPS is not read");
  assert.equal(c.advantages.mode, "batch_zscore", "nested override");
});

Deno.test("config: JSON files, GEM's names, booleans and nulls from strings", async () => {
  const c = await loadTrainConfig({
    file: { path: "c.json", text: JSON.stringify({ save_every: 5, use_rebn: false }) },
    flags: { "resume-from-ckpt": "tinker://r/weights/x", "max-tokens-per-episode": "null" },
    overrides: ["teacher_model_name=local/tiny", "scoring.eval_mode=yes"],
  });
  assert.equal(c.checkpoints.save_every, 5);
  assert.equal(c.advantages.mode, "discounted", "use_rebn=false: discounted returns, no ReBN");
  assert.equal(c.checkpoints.resume_from, "tinker://r/weights/x");
  assert.equal(c.rollout.max_tokens_per_episode, null);
  assert.equal(c.teacher.model, "local/tiny");
  assert.equal(c.scoring.eval_mode, true);
  const gem = await loadTrainConfig({ overrides: ["use_rebn=true", "gamma=0.5", "save_every=-1"] });
  assert.equal(gem.advantages.mode, "discounted_rebn");
  assert.equal(gem.advantages.gamma, 0.5);
  assert.equal(gem.checkpoints.save_every, 0, "GEM's −1 (off) is 0");
});

Deno.test("config: mistakes are one line naming the source, the key and what is allowed", async () => {
  const fails = async (sources: Parameters<typeof loadTrainConfig>[0], pattern: RegExp) => {
    const err = await loadTrainConfig(sources).then(() => null, (e) => e);
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${err}`);
    assert.match(err.message, pattern);
    assert.ok(!err.message.includes("\n"), "one line");
  };
  await fails(
    { flags: { method: "ppo" } },
    /^scoring.method = "ppo" \(from --method=ppo\): .*"rl"\|"opd"\|"combine"/,
  );
  await fails(
    { flags: { "learning-rate": "fast" } },
    /^optimizer.learning_rate = not a number \(from --learning-rate=fast\)/,
  );
  await fails(
    { env: { TINKERBENCH_LORA_RANK: "0" } },
    /^policy.lora_rank = 0 \(from environment variable TINKERBENCH_LORA_RANK=0\)/,
  );
  // Unknown keys, with the closest known name.
  await fails(
    { file: { path: "x.yaml", text: "lora_rnk: 3" } },
    /^config file x.yaml: unknown setting lora_rnk \(did you mean lora_rank \(policy.lora_rank\)\?\)$/,
  );
  await fails(
    { overrides: ["advantages.modee=raw"] },
    /unknown setting advantages.modee \(did you mean advantages.mode\?\)/,
  );
  await fails(
    { file: { path: "x.yaml", text: "policy:\n  group_size: 3" } },
    /unknown setting policy.group_size \(did you mean rollout.group_size\?\)/,
  );
  await fails({ env: { TINKERBENCH_NOTHING_LIKE_IT: "1" } }, /unknown setting nothing_like_it$/);
  await fails({ flags: { record_dir: "x" } }, /unsupported setting record_dir: OpenClaw.s records/);
  // One setting twice under two names in one source.
  await fails(
    { file: { path: "x.yaml", text: "save_interval: 2\ncheckpoints:\n  save_every: 3" } },
    /^config file x.yaml: save_interval and checkpoints.save_every both set checkpoints.save_every$/,
  );
  await fails(
    { env: { KL_LOSS_COEF: "0.1", TINKERBENCH_SCORING__KL_LOSS_COEF: "0.2" } },
    /^environment: KL_LOSS_COEF and TINKERBENCH_SCORING__KL_LOSS_COEF both set scoring.kl_loss_coef$/,
  );
  await fails(
    { flags: { "batch-size": "2", "rollout.groups-per-batch": "3" } },
    /^flags: --batch-size and --rollout.groups-per-batch both set rollout.groups_per_batch$/,
  );
  await fails(
    { overrides: ["num_env=2", "max_active_tasks=3"] },
    /^--overrides: num_env and max_active_tasks both set rollout.max_concurrency$/,
  );
  await fails(
    { overrides: ["use_rebn=true", "advantages.mode=raw"] },
    /use_rebn and advantages.mode both set advantages.mode/,
  );
  // Shapes.
  await fails({ overrides: ["rollout=3"] }, /rollout is a section; set its fields/);
  await fails({ overrides: ["max_steps.x=3"] }, /max_steps is a setting, not a section/);
  await fails({ overrides: ["use_rebn=maybe"] }, /use_rebn=maybe: expected true or false/);
  await fails({ file: { path: "x.yaml", text: "- a\n- b" } }, /expected a mapping/);
  await fails({ file: { path: "x.yaml", text: "a: [" } }, /^config file x.yaml: /);
  await fails({ overrides: ["gamma"] }, /expected key.path=value/);
  await fails(
    { overrides: ["advantages.mode=best"] },
    /advantages.mode = "best" \(from --overrides advantages.mode=best\)/,
  );
  await fails(
    { overrides: ["advantages.clamp_min=2", "advantages.clamp_max=1"] },
    /advantages.clamp_min = 2 .*clamp_min must not exceed clamp_max/,
  );
  await fails(
    { flags: { "loss-fn-config": "beta" } },
    /optimizer.loss_fn_config expects name=value/,
  );
  await fails({ file: { path: "/nonexistent/run.yaml" } }, /--config-path \/nonexistent\/run.yaml/);
  // Down-sampling to the group's own size or more would train on every episode.
  await fails(
    { flags: { "group-size": "8", "advantages.downsample-to": "8" } },
    /^advantages.downsample_to = 8 .*must be less than rollout.group_size \(8\).*--group-size 16$/,
  );
  await fails(
    {
      flags: { "advantages.downsample-to": "4" },
      file: {
        path: "m.yaml",
        text: "environments:\n  a: {num_rollouts: 8}\n  b: {num_rollouts: 4}",
      },
    },
    /must be less than environments.b.num_rollouts \(4\)/,
  );
  await fails(
    { flags: { "group-size": "8", "advantages.downsample-to": "4", method: "opd" } },
    /^advantages.downsample_to = 4 .*--method opd trains on none/,
  );
});

Deno.test("config: the learning rate resolves for the model; nulls take numbers", async () => {
  const c = await loadTrainConfig({
    flags: { "learning-rate": "3e-5" },
    overrides: ["advantages.clampMin=-2", "advantages.non_terminal_reward=0"],
  });
  assert.equal(c.optimizer.learning_rate, 3e-5);
  assert.equal(c.advantages.clamp_min, -2, "the earlier camelCase path still works");
  assert.equal(c.advantages.non_final_turn_reward, 0, "the earlier name still works");
  assert.equal((await loadTrainConfig()).optimizer.learning_rate, 1e-3, "local/* default");
  const cloud = await loadTrainConfig({ flags: { "model-name": "Qwen/Qwen3-8B" } });
  assert.equal(cloud.optimizer.learning_rate, 1e-4, "OpenClaw's default on cloud models");
  const raw = TrainConfigSchema.parse({});
  assert.equal(raw.optimizer.learning_rate, null);
  assert.equal(resolveLearningRate(raw), 1e-3);
});

Deno.test("config: the loss (dro), its settings and the advantage section for lib/advantages", async () => {
  const kv = await loadTrainConfig({ flags: { "loss-fn": "dro", "loss-fn-config": "beta=0.1" } });
  assert.equal(kv.optimizer.loss_fn, "dro");
  assert.deepEqual(kv.optimizer.loss_fn_config, { beta: 0.1 });
  const json = await loadTrainConfig({
    file: { path: "r.yaml", text: "loss_fn: ppo\nloss_fn_config: { clip_low_threshold: 0.7 }" },
    overrides: ["optimizer.loss_fn_config.clip_high_threshold=1.3"],
  });
  assert.deepEqual(json.optimizer.loss_fn_config, {
    clip_low_threshold: 0.7,
    clip_high_threshold: 1.3,
  });
  const env = await loadTrainConfig({
    env: { TINKERBENCH_LOSS_FN_CONFIG: '{"clip_low_threshold": 0.5}' },
  });
  assert.deepEqual(env.optimizer.loss_fn_config, { clip_low_threshold: 0.5 });

  const a = await loadTrainConfig({
    overrides: ["remove_constant_reward_groups=true", "advantages.reward_reduction=max"],
  });
  assert.deepEqual(advantageConfig(a.advantages), {
    mode: "group_centered",
    gamma: 0.9,
    constantGroups: "drop_keep_one",
    downsampleTo: null,
    rewardReduction: "max",
    nonFinalTurnReward: null,
    clampMin: null,
    clampMax: null,
    eps: 1e-9,
  });
});

Deno.test("config: proxy is off until a field is set; environments is a map", async () => {
  const on = await loadTrainConfig({ flags: { "proxy-port": "0" } });
  assert.deepEqual(on.proxy, {
    host: "0.0.0.0",
    port: 0,
    served_model_name: null,
    default_turn_type: "main",
    session_idle_s: 600,
    truncate_keep_head: null,
    session_binding: "token",
    reward_bound: 100,
    max_sessions: 1024,
    late_reward_s: 30,
    pause_during_step: false,
    pause_timeout_s: 300,
  });
  const off = await loadTrainConfig({ flags: { "proxy-port": "0" }, overrides: ["proxy=null"] });
  assert.equal(off.proxy, null);
  const envs = await loadTrainConfig({
    file: {
      path: "e.yaml",
      text: "environments:\n  game:GuessTheNumber-v0-easy: { weight: 2 }\n  wordle: {}\n",
    },
    overrides: ["environments.wordle.env_id=game:Wordle-v0-easy"],
  });
  const entry = EnvironmentEntrySchema.parse({});
  assert.deepEqual(envs.environments, {
    "game:GuessTheNumber-v0-easy": { ...entry, weight: 2 },
    wordle: { ...entry, env_id: "game:Wordle-v0-easy" },
  });
  const err = await loadTrainConfig({
    file: { path: "e.yaml", text: "environments:\n  a: { wieght: 2 }\n" },
  }).then(() => null, (e) => e);
  assert.match(String(err), /environments.a = \{"wieght":2\} \(from config file e.yaml\)/);
});

Deno.test("config: the run directory's config.json is the nested, resolved config and loads back", async () => {
  const cfg = await loadTrainConfig({
    flags: { "batch-size": 2, "group-size": 3, method: "opd", "proxy-port": 0 },
    overrides: ["use_rebn=true", "environments.a.weight=2"],
  });
  const dir = await Deno.makeTempDir({ prefix: "tb-config-" });
  await (await RunLog.open(dir)).writeConfig(cfg);
  const path = join(dir, "config.json");
  const written = JSON.parse(await Deno.readTextFile(path));
  assert.deepEqual(Object.keys(written), Object.keys(TrainConfigSchema.shape));
  assert.equal(written.rollout.groups_per_batch, 2);
  assert.equal(written.optimizer.learning_rate, 1e-3, "resolved");
  assert.equal(written.batch_size, undefined, "no flat keys");
  assert.deepEqual(await loadTrainConfig({ file: { path } }), cfg);
});
