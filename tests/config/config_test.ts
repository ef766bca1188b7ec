import { assert } from "../assert.ts";
import { ConfigError, loadTrainConfig, resolveLearningRate } from "../../lib/config/mod.ts";

Deno.test("config: defaults are the seeds' defaults", async () => {
  const c = await loadTrainConfig();
  assert.equal(c.method, "rl");
  assert.equal(c.lora_rank, 32);
  assert.equal(c.gamma, 0.9);
  assert.equal(c.prm_m, 3);
  assert.equal(c.advantages.mode, "group_centered");
});

Deno.test("config: precedence is defaults < file < env < flags < overrides", async () => {
  const file = {
    path: "run.yaml",
    text:
      "learning_rate: 0.001\nlora_rank: 8\nw_opd: 0.5\nmax_steps: 7\nadvantages:\n  mode: raw\n",
  };
  const c = await loadTrainConfig({
    file,
    env: {
      OPENCLAW_COMBINE_W_OPD: "0.25",
      TINKERBENCH_LORA_RANK: "16",
      KL_LOSS_COEF: "0.02",
      UNRELATED: "x",
      TINKERBENCH_HOME: "/tmp/local-backend",
    },
    flags: { "lora-rank": "4", method: "combine", "eval-mode": true },
    overrides: ["advantages.mode=batch_zscore", "max_steps=9"],
  });
  assert.equal(c.learning_rate, 0.001, "file");
  assert.equal(c.w_opd, 0.25, "env beats file");
  assert.equal(c.kl_loss_coef, 0.02, "OpenClaw's env var");
  assert.equal(c.lora_rank, 4, "flag beats env and file");
  assert.equal(c.method, "combine");
  assert.equal(c.eval_mode, true);
  assert.equal(c.max_steps, 9, "override beats file");
  assert.equal(c.advantages.mode, "batch_zscore", "nested override");
});

Deno.test("config: JSON files, the GEM alias save_every, booleans and nulls from strings", async () => {
  const c = await loadTrainConfig({
    file: { path: "c.json", text: JSON.stringify({ save_every: 5, use_rebn: false }) },
    flags: { "use-rebn": "yes", "resume-from-ckpt": "tinker://r/weights/x" },
    overrides: ["teacher_model_name=local/tiny"],
  });
  assert.equal(c.save_interval, 5);
  assert.equal(c.use_rebn, true);
  assert.equal(c.resume_from_ckpt, "tinker://r/weights/x");
  assert.equal(c.teacher_model_name, "local/tiny");
});

Deno.test("config: a bad value is one line naming the source, the value and what is allowed", async () => {
  const fails = async (sources: Parameters<typeof loadTrainConfig>[0], pattern: RegExp) => {
    const err = await loadTrainConfig(sources).then(() => null, (e) => e);
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${err}`);
    assert.match(err.message, pattern);
    assert.ok(!err.message.includes("\n"), "one line");
  };
  await fails(
    { flags: { method: "ppo" } },
    /method = "ppo" \(from --method=ppo\): .*"rl"\|"opd"\|"combine"/,
  );
  await fails(
    { flags: { "learning-rate": "fast" } },
    /learning_rate = not a number \(from --learning-rate=fast\)/,
  );
  await fails(
    { env: { TINKERBENCH_LORA_RANK: "0" } },
    /lora_rank = 0 \(from environment variable TINKERBENCH_LORA_RANK=0\)/,
  );
  await fails(
    { file: { path: "x.yaml", text: "lora_rnk: 3" } },
    /config file x.yaml: unknown setting lora_rnk/,
  );
  await fails({ file: { path: "x.yaml", text: "- a\n- b" } }, /expected a mapping/);
  await fails({ overrides: ["advantages.modee=raw"] }, /unknown key advantages.modee/);
  await fails({ overrides: ["gamma"] }, /expected key.path=value/);
  await fails(
    { overrides: ["advantages.mode=best"] },
    /advantages.mode = "best" \(from --overrides advantages.mode=best\)/,
  );
  await fails({ file: { path: "/nonexistent/run.yaml" } }, /--config-path \/nonexistent\/run.yaml/);
});

Deno.test("config: settings that default to null take numbers; the learning rate follows the model", async () => {
  const c = await loadTrainConfig({
    flags: { "learning-rate": "3e-5" },
    overrides: ["advantages.clampMin=-2", "teacher_model_name=local/tiny"],
  });
  assert.equal(c.learning_rate, 3e-5);
  assert.equal(c.advantages.clampMin, -2);
  assert.equal(c.teacher_model_name, "local/tiny");
  assert.equal(resolveLearningRate(c), 3e-5);
  const d = await loadTrainConfig({});
  assert.equal(d.learning_rate, null);
  assert.equal(resolveLearningRate({ ...d, model_name: "local/games" }), 3e-3);
  assert.equal(resolveLearningRate({ ...d, model_name: "Qwen/Qwen3-8B" }), 1e-4);
});
