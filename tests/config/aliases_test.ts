import { assert } from "../assert.ts";
import {
  CONFIG_ALIASES,
  CONFIG_ENV_ALIASES,
  type ConfigField,
  type ConfigSources,
  envName,
  flagName,
  listConfigFields,
  listConfigSections,
  loadTrainConfig,
  type TrainConfig,
} from "../../lib/config/mod.ts";

const FIELDS = new Map(listConfigFields().map((f) => [f.path, f]));

/** A value other than the default that the field accepts, as text and as it loads. */
function sample(f: ConfigField): { text: string; value: unknown } {
  if (f.type.startsWith("boolean")) return { text: String(!f.default), value: !f.default };
  if (f.type.startsWith("map of string to string")) {
    return { text: "beta=abc", value: { beta: "abc" } };
  }
  if (f.type.startsWith("map")) return { text: "beta=0.5", value: { beta: 0.5 } };
  if (f.type.startsWith("url")) {
    return { text: "http://127.0.0.1:9/v1", value: "http://127.0.0.1:9/v1" };
  }
  if (f.type.startsWith("integer")) {
    const v = typeof f.default === "number" ? f.default + 1 : 2;
    return { text: String(v), value: v };
  }
  if (f.type.startsWith("number")) return { text: "0.5", value: 0.5 };
  if (f.type.startsWith("string")) return { text: "some/name-1", value: "some/name-1" };
  const options = f.type.split(" | ").filter((o) => o !== "null");
  const v = options.find((o) => JSON.stringify(o) !== JSON.stringify(f.default)) ?? options[0];
  return { text: v, value: v };
}

function at(cfg: TrainConfig, path: string): unknown {
  return path.split(".").reduce((o: unknown, k) => (o as Record<string, unknown>)?.[k], cfg);
}

/** The YAML of `name: text` (nested for a dotted name; YAML types the value), maps as `{k: v}`. */
function yaml(name: string, text: string): string {
  const parts = name.split(".");
  const value = text.includes("=") ? `{ ${text.replace("=", ": ")} }` : text;
  return parts.map((p, i) => `${"  ".repeat(i)}${p}:`).join("\n") + ` ${value}\n`;
}

/** Loads `name = text` through each source a name of its kind can use. */
async function everySource(name: string, text: string): Promise<Record<string, TrainConfig>> {
  const sources: Record<string, ConfigSources> = {
    file: { file: { path: "run.yaml", text: yaml(name, text) } },
    overrides: { overrides: [`${name}=${text}`] },
  };
  if (!/[A-Z]/.test(name)) {
    sources.flag = { flags: { [flagName(name).slice(2)]: text } };
    sources.env = { env: { [envName(name)]: text } };
  }
  const out: Record<string, TrainConfig> = {};
  for (const [source, s] of Object.entries(sources)) {
    out[source] = await loadTrainConfig(s).catch((e) => {
      throw new Error(`${name} via ${source}: ${e.message}`);
    });
  }
  return out;
}

Deno.test("aliases: every alias sets its path, from a file, a flag, the environment and --overrides", async () => {
  // Aliases whose values mean something else here: the value given, and what it becomes.
  const translated: Record<string, { text: string; value: unknown }> = {
    use_rebn: { text: "false", value: "discounted" },
    remove_constant_reward_groups: { text: "true", value: "drop_keep_one" },
    terminate_on_parse_error: { text: "true", value: "end" },
    save_every: { text: "-1", value: 0 },
    advantage_calculation: { text: "centered_normalized", value: "group_zscore" },
  };
  for (const [name, alias] of Object.entries(CONFIG_ALIASES)) {
    const field = FIELDS.get(alias.path);
    assert.ok(field, `alias ${name}: ${alias.path} is not a field`);
    assert.ok(field.aliases.includes(name), `${alias.path} lists ${name}`);
    const s = translated[name] ?? sample(field);
    for (const [source, cfg] of Object.entries(await everySource(name, s.text))) {
      assert.deepEqual(at(cfg, alias.path), s.value, `${name} via ${source}`);
    }
  }
  assert.equal(
    (await loadTrainConfig({ overrides: ["use_rebn=yes"] })).advantages.mode,
    "discounted_rebn",
  );
});

Deno.test("aliases: every path sets its field from every source", async () => {
  for (const f of FIELDS.values()) {
    if (f.path.includes("<name>")) continue; // map entries: see config_test
    const s = sample(f);
    for (const [source, cfg] of Object.entries(await everySource(f.path, s.text))) {
      assert.deepEqual(at(cfg, f.path), s.value, `${f.path} via ${source}`);
    }
    assert.ok(f.flags.includes(flagName(f.path)) && f.env.includes(envName(f.path)));
  }
});

Deno.test("aliases: OpenClaw's environment variables set their settings", async () => {
  for (const [variable, alias] of Object.entries(CONFIG_ENV_ALIASES)) {
    const path = CONFIG_ALIASES[alias]?.path;
    assert.ok(path, `${variable}: ${alias} is not an alias`);
    const s = sample(FIELDS.get(path)!);
    const cfg = await loadTrainConfig({ env: { [variable]: s.text } });
    assert.deepEqual(at(cfg, path), s.value, variable);
    assert.ok(FIELDS.get(path)!.env.includes(variable));
  }
});

Deno.test("aliases: every flat key of the earlier schema still works, and names never collide", () => {
  // The flat keys (OpenClaw's and GEM's names) of the schema this one replaced.
  const flat = [
    "method",
    "model_name",
    "lora_rank",
    "teacher_model_name",
    "learning_rate",
    "batch_size",
    "max_steps",
    "loss_fn",
    "kl_loss_coef",
    "save_interval",
    "resume_from_ckpt",
    "w_opd",
    "w_rl",
    "train_epochs",
    "eval_mode",
    "prm_m",
    "prm_temperature",
    "prm_max_tokens",
    "reward_source",
    "hint_source",
    "judge_base_url",
    "judge_model",
    "env_id",
    "num_env",
    "rollout_on_error",
    "rollout_timeout_s",
    "max_tokens_per_episode",
    "group_size",
    "gamma",
    "use_rebn",
    "template",
    "max_tokens",
    "temperature",
    "seed",
    "log_path",
    "save_every",
  ]; // deno-fmt-ignore
  const flags = new Set(listConfigFields().flatMap((f) => f.flags));
  for (const key of flat) {
    assert.ok(key in CONFIG_ALIASES || FIELDS.has(key), `${key} is an alias or a path`);
    assert.ok(flags.has(flagName(key)), `--${key} is a flag`);
  }
  const sections = new Set(listConfigSections().map((s) => s.name));
  for (const name of Object.keys(CONFIG_ALIASES)) {
    assert.ok(!FIELDS.has(name) && !sections.has(name), `${name} is both an alias and a path`);
  }
  const all = listConfigFields().flatMap((f) => f.flags);
  assert.equal(new Set(all).size, all.length, "no flag sets two fields");
});
