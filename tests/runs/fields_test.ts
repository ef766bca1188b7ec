import { parse as parseYaml } from "yaml";
import { assert } from "../assert.ts";
import { ConfigError, listConfigFields, loadTrainConfig } from "../../lib/config/mod.ts";
import {
  defaultConfig,
  describeFields,
  FieldError,
  FIELDS,
  trainingSettings,
  validateField,
} from "../../lib/runs/fields.ts";

function fieldError(fn: () => unknown): FieldError {
  try {
    fn();
  } catch (e) {
    if (e instanceof FieldError) return e;
    throw e;
  }
  throw new Error("expected a FieldError");
}

Deno.test("runs fields: the seed's names are there, and locked ones are explained", () => {
  const names = FIELDS.map((f) => f.name);
  for (
    const seed of [
      "group_size",
      "max_token_length",
      "total_steps",
      "steps_per_eval",
      "use_wandb",
      "wandb_name",
      "max_num_workers",
    ]
  ) assert.ok(names.includes(seed), seed);
  const { configurable, locked } = describeFields(defaultConfig("game:GuessTheNumber-v0-easy"));
  assert.deepEqual(locked.map((f) => f.name), [
    "use_wandb",
    "environment",
    "env_module",
    "log_path",
  ]);
  assert.ok(locked.every((f) => f.locked_because && f.locked_because.length > 10));
  assert.equal(configurable.find((f) => f.name === "total_steps")?.training_key, "max_steps");
  assert.equal(
    locked.find((f) => f.name === "environment")?.locked_value,
    "game:GuessTheNumber-v0-easy",
  );
});

Deno.test("runs fields: bad values are refused naming the field and what is allowed", () => {
  const cases: [string, unknown, RegExp, number][] = [
    ["nope", 1, /unknown field "nope"/, 400],
    ["use_wandb", true, /field use_wandb is locked/, 403],
    ["environment", "x", /field environment is locked/, 403],
    ["group_size", "abc", /group_size must be an integer in \[1, 1024\] \(got "abc"\)/, 400],
    ["group_size", 2.5, /group_size must be an integer/, 400],
    ["group_size", 0, /an integer in \[1, 1024\] \(got 0\)/, 400],
    ["group_size", true, /group_size must be an integer/, 400],
    ["learning_rate", 0, /a number in \(0, 1\], or null/, 400],
    ["temperature", -0.5, /temperature must be a number in \[0, 10\]/, 400],
    ["loss_fn", "dpo", /loss_fn must be one of importance_sampling, ppo, cispo, dro/, 400],
    ["method", "ppo", /method must be one of rl, opd, combine/, 400],
    ["model_name", "local/huge", /model_name must be .*: no such local model/, 400],
    ["model_name", "gpt-4", /no renderer for model "gpt-4"/, 400],
    ["wandb_name", "has space", /wandb_name must be 1 to 100 characters/, 400],
    ["use_wandb", "maybe", /locked/, 403],
  ];
  for (const [field, value, message, status] of cases) {
    const e = fieldError(() => validateField(field, value));
    assert.match(e.message, message, `${field}=${JSON.stringify(value)}`);
    assert.equal(e.status, status, `${field}=${JSON.stringify(value)}`);
  }
  const available = fieldError(() => validateField("nope", 1)).extra.available_fields;
  assert.equal((available as string[]).length, FIELDS.filter((f) => !f.locked).length);
});

Deno.test("runs fields: numbers given as text are numbers; null resets the learning rate", () => {
  assert.equal(validateField("group_size", "8"), 8);
  assert.equal(validateField("learning_rate", "4e-5"), 4e-5);
  assert.equal(validateField("learning_rate", null), null);
  assert.equal(validateField("learning_rate", "null"), null);
  assert.equal(validateField("method", "combine"), "combine");
  assert.equal(validateField("model_name", "Qwen/Qwen3-8B"), "Qwen/Qwen3-8B");
});

Deno.test("runs fields: a run's config file has the trainer's flat keys and the trainer loads it", async () => {
  const config = defaultConfig("math:Arithmetic-v0-easy");
  config.total_steps = 7;
  config.max_token_length = 64;
  config.steps_per_eval = 3;
  config.max_num_workers = 5;
  const settings = trainingSettings(config, "/tmp/run-x");
  assert.deepEqual(
    {
      max_steps: settings.max_steps,
      max_tokens: settings.max_tokens,
      save_interval: settings.save_interval,
      num_env: settings.num_env,
      env_id: settings.env_id,
      log_path: settings.log_path,
    },
    {
      max_steps: 7,
      max_tokens: 64,
      save_interval: 3,
      num_env: 5,
      env_id: "math:Arithmetic-v0-easy",
      log_path: "/tmp/run-x",
    },
  );
  assert.ok(!("learning_rate" in settings), "null leaves the trainer's default");
  assert.ok(!("use_wandb" in settings) && !("eval_episodes" in settings));
  const text = JSON.stringify(settings);
  await loadTrainConfig({ file: { path: "run.yaml", text } }); // throws on any unknown key
  assert.deepEqual(parseYaml(text), settings);
});

Deno.test("runs fields: every training key of the table is a name the training config knows", () => {
  const known = new Set(listConfigFields().flatMap((f) => [f.path, ...f.aliases]));
  for (const f of FIELDS) {
    if (f.trainingKey !== null) assert.ok(known.has(f.trainingKey), `${f.name} → ${f.trainingKey}`);
  }
});

Deno.test("runs fields: the training settings' fields are the config schema's, default, range, choices and description", async () => {
  const settings = listConfigFields().filter((f) => f.runApi);
  const fromSchema = FIELDS.filter((f) => f.setting !== null);
  assert.deepEqual(fromSchema.map((f) => f.setting), settings.map((f) => f.path));
  assert.equal(new Set(FIELDS.map((f) => f.name)).size, FIELDS.length, "one field per name");
  // Probes on both sides of every bound and choice: the API accepts a value iff the trainer
  // accepts it as a flag (text read as the setting's type, then the schema's check).
  const probes: unknown[] = [
    -1,
    0,
    0.5,
    1,
    2.5,
    3,
    2 ** 31,
    "",
    "x",
    "7",
    "dro",
    "combine",
    null,
    true,
  ];
  for (const f of fromSchema) {
    const setting = settings.find((s) => s.path === f.setting)!;
    assert.equal(f.description, setting.description, f.name);
    assert.deepEqual(f.default, setting.runApi!.default ?? setting.default, f.name);
    if (f.locked) continue;
    for (const v of f.name === "model_name" ? [] : probes) {
      let accepted = true;
      try {
        validateField(f.name, v);
      } catch (e) {
        if (!(e instanceof FieldError)) throw e;
        accepted = false;
      }
      const trainer = await loadTrainConfig({ flags: { [f.setting!]: v } }).then(
        () => true,
        (e) => {
          if (!(e instanceof ConfigError)) throw e;
          return false;
        },
      );
      assert.equal(accepted, trainer, `${f.name}=${JSON.stringify(v)}`);
    }
  }
});

Deno.test("runs fields: a dro loss and a temperature above 2 are accepted, as by the trainer", async () => {
  assert.equal(validateField("loss_fn", "dro"), "dro");
  assert.equal(validateField("temperature", "2.5"), 2.5);
  const config = defaultConfig("game:GuessTheNumber-v0-easy");
  config.loss_fn = "dro";
  config.temperature = 2.5;
  config.eval_episodes = 8;
  const settings = trainingSettings(config, "/tmp/run-dro");
  const cfg = await loadTrainConfig({ file: { path: "run.json", text: JSON.stringify(settings) } });
  assert.equal(cfg.optimizer.loss_fn, "dro");
  assert.equal(cfg.rollout.temperature, 2.5);
  assert.equal(cfg.eval.episodes, 8, "the run's held-out episodes reach the trainer");
  assert.equal(cfg.max_steps, 50, "the run API's own default");
});
