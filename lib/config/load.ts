/**
 * Loading the training configuration from its sources, in order of precedence:
 * defaults < config file (`--config-path`, YAML or JSON) < environment variables < flags <
 * `--overrides a.b=c`. Every source takes dotted paths and the aliases of `./aliases.ts`. A
 * mistake is one line naming where it came from: an unknown key (with the closest known one),
 * one setting given twice under two names in one source, or a bad value with what is allowed.
 *
 * @module
 */

import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import {
  CONFIG_ALIASES,
  CONFIG_ENV_ALIASES,
  ENV_PREFIX,
  NON_CONFIG_ENV_VARS,
  parseBoolean,
} from "./aliases.ts";
import { ConfigError } from "./errors.ts";
import {
  defaultsOf,
  entryFieldAliases,
  type Resolved,
  resolveName,
  type SettingNode,
  SETTINGS,
} from "./fields.ts";
import { resolveLearningRate, type TrainConfig, TrainConfigSchema } from "./schema.ts";

export { ConfigError };

/** The raw inputs of {@link loadTrainConfig}; all optional. */
export interface ConfigSources {
  /** The config file's path, and its text when already read. */
  file?: { path: string; text?: string };
  /** Environment variables (default: none; pass `Deno.env.toObject()`). */
  env?: Record<string, string>;
  /** Flag values by name (a path or an alias, snake_case or kebab-case), strings or typed. */
  flags?: Record<string, unknown>;
  /** `key=value` assignments (a path or an alias), applied last. */
  overrides?: string[];
}

/** One setting as a source gives it. */
interface Assignment {
  /** The name to resolve (a path or an alias). */
  name: string;
  /** The name as the user wrote it (`--save-every`, `TINKERBENCH_SAVE_EVERY`, `save_every`). */
  label: string;
  value: unknown;
  /** The source and the assignment, for messages. */
  from: string;
}

/**
 * Merges the sources over the defaults and validates the result. The learning rate, when not
 * set, is resolved for the model (see {@link resolveLearningRate}).
 *
 * @example
 * const cfg = await loadTrainConfig({
 *   flags: { method: "rl", "learning-rate": "3e-5", "rollout.group-size": 8 },
 *   overrides: ["advantages.mode=batch_zscore", "use_rebn=true"],
 * });
 * cfg.rollout.group_size; // 8
 */
export async function loadTrainConfig(sources: ConfigSources = {}): Promise<TrainConfig> {
  const merged = defaultsOf(SETTINGS) as Record<string, unknown>;
  const origin = new Map<string, string>();
  const apply = (source: string, assignments: Assignment[]) => {
    const seen: Array<{ key: string; label: string; lowest: boolean }> = [];
    // Values this source gave a `lowest` setting (see ConfigAlias.lowest), by path.
    const lowestSet = new Map<string, unknown>();
    for (const a of assignments) {
      let r: Resolved;
      try {
        r = resolveName(a.name);
      } catch (e) {
        throw new ConfigError(`${a.from}: ${(e as Error).message}`);
      }
      const key = r.path.join(".");
      const lowest = r.alias ? r.alias.lowest === true : LOWEST_PATHS.has(key);
      let value = a.value;
      if (lowest) {
        value = readSetting(value, r.node, key, a.from);
        // No limit under a name that once took null: the other name's, or the default.
        if (value === null && r.alias?.nullIsUnset) continue;
        const before = lowestSet.get(key);
        if (typeof before === "number" && typeof value === "number") {
          value = Math.min(before, value);
        }
        lowestSet.set(key, value);
      }
      const twice = seen.find((s) =>
        s.label !== a.label && !(lowest && s.lowest && s.key === key) &&
        (s.key === key || s.key.startsWith(`${key}.`) || key.startsWith(`${s.key}.`))
      );
      if (twice) {
        throw new ConfigError(`${source}: ${twice.label} and ${a.label} both set ${key}`);
      }
      seen.push({ key, label: a.label, lowest });
      assign(merged, r, value, a.from);
      origin.set(key, a.from);
    }
  };

  if (sources.file) {
    const { path } = sources.file;
    const text = sources.file.text ?? await readConfigFile(path);
    apply(`config file ${path}`, fileAssignments(path, text));
  }
  apply("environment", envAssignments(sources.env ?? {}));
  apply(
    "flags",
    Object.entries(sources.flags ?? {}).filter(([, v]) => v !== undefined).map(([name, value]) => {
      const flag = `--${name.replace(/^--/, "").replaceAll("_", "-")}`;
      return { name: name.replace(/^--/, ""), label: flag, value, from: `${flag}=${value}` };
    }),
  );
  apply(
    "--overrides",
    (sources.overrides ?? []).map((assignment) => {
      const eq = assignment.indexOf("=");
      if (eq <= 0) throw new ConfigError(`--overrides ${assignment}: expected key.path=value`);
      const name = assignment.slice(0, eq);
      const value = assignment.slice(eq + 1);
      return { name, label: name, value, from: `--overrides ${assignment}` };
    }),
  );

  const parsed = TrainConfigSchema.safeParse(merged);
  if (!parsed.success) throw new ConfigError(describe(parsed.error, origin, merged));
  const cfg = parsed.data;
  cfg.optimizer.learning_rate = resolveLearningRate(cfg);
  return cfg;
}

function fileAssignments(path: string, text: string): Assignment[] {
  let data: unknown;
  try {
    data = path.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
  } catch (e) {
    throw new ConfigError(`config file ${path}: ${(e as Error).message.split("\n")[0]}`);
  }
  if (data !== null && !isMapping(data)) {
    throw new ConfigError(`config file ${path}: expected a mapping of settings`);
  }
  const out: Assignment[] = [];
  // Sections are walked into; a map section (environments, loss_fn_config) is one value.
  const walk = (obj: Record<string, unknown>, prefix: string) => {
    for (const [k, value] of Object.entries(obj)) {
      const name = prefix ? `${prefix}.${k}` : k;
      let r: Resolved;
      try {
        r = resolveName(name);
      } catch (e) {
        throw new ConfigError(`config file ${path}: ${(e as Error).message}`);
      }
      if (r.node.kind === "section" && isMapping(value)) walk(value, r.path.join("."));
      else out.push({ name, label: name, value, from: `config file ${path}` });
    }
  };
  walk((data ?? {}) as Record<string, unknown>, "");
  return out;
}

function envAssignments(env: Record<string, string>): Assignment[] {
  const out: Assignment[] = [];
  for (const [variable, value] of Object.entries(env)) {
    const name = CONFIG_ENV_ALIASES[variable] ??
      (variable.startsWith(ENV_PREFIX) && !NON_CONFIG_ENV_VARS.has(variable)
        ? variable.slice(ENV_PREFIX.length).toLowerCase().replaceAll("__", ".")
        : undefined);
    if (name === undefined) continue;
    out.push({ name, label: variable, value, from: `environment variable ${variable}=${value}` });
  }
  return out;
}

/** Sets one resolved setting, creating a section left null (`proxy`) or a map entry. */
function assign(merged: Record<string, unknown>, r: Resolved, raw: unknown, from: string) {
  let value = raw;
  if (r.alias?.value) {
    try {
      value = r.alias.value.map(raw);
    } catch (e) {
      throw new ConfigError(`${from}: ${(e as Error).message}`);
    }
  }
  let target = merged;
  let node: SettingNode = SETTINGS;
  for (const seg of r.path.slice(0, -1)) {
    node = node.kind === "section" ? node.fields[seg] : (node as { value: SettingNode }).value;
    if (!isMapping(target[seg])) target[seg] = node.kind === "section" ? defaultsOf(node) : {};
    target = target[seg] as Record<string, unknown>;
  }
  const read = readSetting(value, r.node, r.path.join("."), from);
  target[r.path.at(-1)!] = r.node.kind === "map"
    ? renameEntryFields(read, r.path.join("."), from)
    : read;
}

/** Settings whose `lowest` aliases may be given beside their own name (ConfigAlias.lowest). */
const LOWEST_PATHS: ReadonlySet<string> = new Set(
  Object.values(CONFIG_ALIASES).filter((a) => a.lowest).map((a) => a.path),
);

/** A map section's entries with their fields' old names (`nonterminal_reward`) renamed. */
function renameEntryFields(value: unknown, mapPath: string, from: string): unknown {
  const renames = entryFieldAliases(mapPath);
  if (renames.size === 0 || !isMapping(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, entry]) => {
      if (!isMapping(entry)) return [name, entry];
      const out: Record<string, unknown> = { ...entry };
      for (const [old, now] of renames) {
        if (!(old in out)) continue;
        if (now in out) {
          throw new ConfigError(
            `${from}: ${mapPath}.${name}: ${old} and ${now} both set ${mapPath}.${name}.${now}`,
          );
        }
        out[now] = out[old];
        delete out[old];
      }
      return [name, out];
    }),
  );
}

/**
 * A string from a flag, variable, override or the run API as the setting's type (numbers from
 * numeric text, booleans from true/false words, null from "null" or "" when nullable); other
 * values as given. The setting's schema then checks the result. `key` and `from` name it in
 * errors.
 */
export function readSetting(value: unknown, node: SettingNode, key: string, from: string): unknown {
  if (typeof value !== "string") return value;
  const nullable = node.kind === "section" ? node.nullable : node.kind === "leaf" && node.nullable;
  if (nullable && (value === "null" || value === "")) return null;
  if (node.kind === "section") {
    const fields = Object.keys(node.fields).slice(0, 3).map((f) => `${key}.${f}`).join(", ");
    throw new ConfigError(`${from}: ${key} is a section; set its fields (${fields}, ...)`);
  }
  if (node.kind === "map") return readMap(value, node.value, key, from);
  switch (node.read) {
    case "integer":
    case "number":
      return value.trim() === "" ? NaN : Number(value);
    case "boolean":
      return parseBoolean(value) ?? value;
    default:
      return value;
  }
}

/** A map from a string: JSON (`{"beta": 0.1}`) or `key=value,key=value`. */
function readMap(text: string, value: SettingNode, key: string, from: string): unknown {
  if (text.trim().startsWith("{")) {
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new ConfigError(`${from}: ${key} is not JSON (${(e as Error).message})`);
    }
  }
  const entries = text.split(",").filter((s) => s.trim() !== "").map((pair) => {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new ConfigError(`${from}: ${key} expects name=value[,name=value...]`);
    const name = pair.slice(0, eq).trim();
    return [name, readSetting(pair.slice(eq + 1).trim(), value, `${key}.${name}`, from)];
  });
  return Object.fromEntries(entries);
}

function isMapping(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

async function readConfigFile(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    throw new ConfigError(`--config-path ${path}: ${(e as Error).message}`);
  }
}

function describe(
  error: z.ZodError,
  origin: Map<string, string>,
  merged: Record<string, unknown>,
): string {
  const issue = error.issues[0];
  const path = issue.path.map(String);
  const key = path.join(".");
  let value: unknown = merged;
  for (const p of path) value = (value as Record<string, unknown>)?.[p];
  let from = "default";
  for (let n = path.length; n > 0; n--) {
    const o = origin.get(path.slice(0, n).join("."));
    if (o) {
      from = o;
      break;
    }
  }
  const shown = typeof value === "number" && !Number.isFinite(value)
    ? "not a number"
    : JSON.stringify(value);
  const range = issue.code === "too_big" || issue.code === "too_small" ? rangeOf(key) : null;
  const what = range ? `out of range: ${key} is ${range}` : issue.message;
  return `${key} = ${shown} (from ${from}): ${what}`;
}

/** A numeric setting's range in words (`an integer in [1, 1024]`), from its schema. */
function rangeOf(key: string): string | null {
  let node: SettingNode;
  try {
    node = resolveName(key).node;
  } catch {
    return null;
  }
  if (node.kind !== "leaf" || (node.read !== "integer" && node.read !== "number")) return null;
  const type = node.type.replace(/ \| null$/, "");
  return `${type.startsWith("integer") ? "an" : "a"} ${type}${node.nullable ? ", or null" : ""}`;
}
