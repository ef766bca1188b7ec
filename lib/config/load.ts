/**
 * Loading the training configuration from its sources, in order of precedence:
 * defaults < config file (`--config-path`, YAML or JSON) < environment variables < flags <
 * `--overrides a.b=c`. A bad value is one line naming where it came from, the value, and what
 * is allowed.
 *
 * @module
 */

import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import {
  CONFIG_ALIASES,
  CONFIG_ENV_VARS,
  ENV_PREFIX,
  NON_CONFIG_ENV_VARS,
  type TrainConfig,
  TrainConfigSchema,
} from "./schema.ts";

/** A configuration mistake, with the source and key it concerns. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** The raw inputs of {@link loadTrainConfig}; all optional. */
export interface ConfigSources {
  /** Parsed contents of the config file, or its path (read here). */
  file?: { path: string; text?: string };
  /** Environment variables (default: none; pass `Deno.env.toObject()`). */
  env?: Record<string, string>;
  /** Flag values by key (snake_case or kebab-case), as strings or typed values. */
  flags?: Record<string, unknown>;
  /** `a.b=c` assignments, applied last. */
  overrides?: string[];
}

const DEFAULTS: TrainConfig = TrainConfigSchema.parse({});

/**
 * Merges the sources over the defaults and validates the result.
 *
 * @example
 * const cfg = await loadTrainConfig({
 *   flags: { method: "rl", "learning-rate": "3e-5" },
 *   overrides: ["advantages.mode=batch_zscore"],
 * });
 */
export async function loadTrainConfig(sources: ConfigSources = {}): Promise<TrainConfig> {
  const merged: Record<string, unknown> = structuredClone(DEFAULTS) as Record<string, unknown>;
  const origin = new Map<string, string>();
  const set = (path: string[], value: unknown, from: string) => {
    const key = canonicalKey(path[0], from);
    let target = merged;
    const sections = path.length === 1 ? [] : [key, ...path.slice(1, -1)];
    for (const p of sections) {
      if (typeof target[p] !== "object" || target[p] === null) {
        throw new ConfigError(`${from}: ${path.join(".")} is not a section of the config`);
      }
      target = target[p] as Record<string, unknown>;
    }
    const last = path.length === 1 ? key : path.at(-1)!;
    if (!(last in target)) {
      throw new ConfigError(
        `${from}: unknown key ${path.join(".")} (known: ${Object.keys(target).join(", ")})`,
      );
    }
    target[last] = typeof value === "string"
      ? coerce(value, target[last], fieldSchema([key, ...path.slice(1)]))
      : value;
    origin.set([key, ...path.slice(1)].join("."), from);
  };

  if (sources.file) {
    const { path } = sources.file;
    const text = sources.file.text ?? await readConfigFile(path);
    let data: unknown;
    try {
      data = path.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
    } catch (e) {
      throw new ConfigError(`config file ${path}: ${(e as Error).message.split("\n")[0]}`);
    }
    if (data !== null && (typeof data !== "object" || Array.isArray(data))) {
      throw new ConfigError(`config file ${path}: expected a mapping of settings`);
    }
    for (const [path2, value] of leaves(data as Record<string, unknown> ?? {})) {
      set(path2, value, `config file ${path}`);
    }
  }
  for (const [name, value] of Object.entries(sources.env ?? {})) {
    const key = CONFIG_ENV_VARS[name] ??
      (name.startsWith(ENV_PREFIX) ? name.slice(ENV_PREFIX.length).toLowerCase() : undefined);
    if (key === undefined || NON_CONFIG_ENV_VARS.has(name)) continue;
    set([key], value, `environment variable ${name}=${value}`);
  }
  for (const [name, value] of Object.entries(sources.flags ?? {})) {
    if (value === undefined) continue;
    set([name.replaceAll("-", "_")], value, `--${name.replaceAll("_", "-")}=${value}`);
  }
  for (const assignment of sources.overrides ?? []) {
    const eq = assignment.indexOf("=");
    if (eq <= 0) throw new ConfigError(`--overrides ${assignment}: expected key.path=value`);
    set(assignment.slice(0, eq).split("."), assignment.slice(eq + 1), `--overrides ${assignment}`);
  }

  const parsed = TrainConfigSchema.safeParse(merged);
  if (!parsed.success) throw new ConfigError(describe(parsed.error, origin, merged));
  return parsed.data;
}

function canonicalKey(key: string, from: string): string {
  const k = key.replaceAll("-", "_");
  if (k in CONFIG_ALIASES) return CONFIG_ALIASES[k];
  if (!(k in DEFAULTS)) {
    throw new ConfigError(
      `${from}: unknown setting ${key} (known: ${Object.keys(DEFAULTS).join(", ")})`,
    );
  }
  return k;
}

/** The schema of a setting by path, with defaults and nullability unwrapped. */
function fieldSchema(path: string[]): z.ZodType | undefined {
  let schema: unknown = TrainConfigSchema;
  for (const p of path) {
    schema = unwrap(schema);
    const shape = (schema as { shape?: Record<string, z.ZodType> }).shape;
    if (!shape?.[p]) return undefined;
    schema = shape[p];
  }
  return schema as z.ZodType;
}

function unwrap(schema: unknown): unknown {
  let s = schema as { _zod?: { def?: { innerType?: unknown } } };
  while (s?._zod?.def?.innerType) s = s._zod.def.innerType as typeof s;
  return s;
}

/** Turns a string from a flag, variable or override into the type of the setting it replaces. */
function coerce(value: string, current: unknown, schema?: z.ZodType): unknown {
  // A setting that defaults to null takes a number when its schema accepts one.
  const numeric = schema !== undefined &&
    [1, 1e-3, -1].some((probe) => schema.safeParse(probe).success);
  if (current === null && numeric && value !== "null" && value.trim() !== "") return Number(value);
  if (typeof current === "number") return value.trim() === "" ? NaN : Number(value);
  if (typeof current === "boolean") {
    const v = value.toLowerCase();
    if (["true", "1", "yes", "on"].includes(v)) return true;
    if (["false", "0", "no", "off"].includes(v)) return false;
    return value;
  }
  if (current === null) return value === "null" || value === "" ? null : value;
  return value;
}

/** `[path, value]` of every non-object leaf of a nested mapping. */
function leaves(obj: Record<string, unknown>, prefix: string[] = []): Array<[string[], unknown]> {
  return Object.entries(obj).flatMap(([k, v]) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? leaves(v as Record<string, unknown>, [...prefix, k])
      : [[[...prefix, k], v] as [string[], unknown]]
  );
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
  const key = issue.path.join(".");
  let value: unknown = merged;
  for (const p of issue.path) value = (value as Record<PropertyKey, unknown>)?.[p as PropertyKey];
  const from = origin.get(key) ?? "default";
  const shown = typeof value === "number" && !Number.isFinite(value)
    ? "not a number"
    : JSON.stringify(value);
  return `${key} = ${shown} (from ${from}): ${issue.message}`;
}
