/**
 * The settings as data: every section and leaf field of {@link TrainConfigSchema} with its
 * type, default, description and aliases (for `--help`, the docs and the run-management API),
 * and the resolution of a name as a user writes it (a dotted path, an alias, kebab-case) to
 * its path, with a suggestion when the name is unknown.
 *
 * @module
 */

import { editDistance } from "../util/similar.ts";
import { z } from "zod";
import type { RunApiMeta } from "./run_api.ts";
import { TrainConfigSchema } from "./schema.ts";
import {
  CONFIG_ALIASES,
  CONFIG_ENV_ALIASES,
  type ConfigAlias,
  ENV_PREFIX,
  UNSUPPORTED_SEED_NAMES,
} from "./aliases.ts";

/** A leaf field of the configuration. */
export interface ConfigField {
  /** Dotted path, e.g. `rollout.group_size`; `<name>` stands for an entry of a map section. */
  path: string;
  /** The values it takes, e.g. `integer >= 1`, `rl | opd | combine`, `number | null`. */
  type: string;
  default: unknown;
  /** One line. */
  description: string;
  /** Other names of the field (see `./aliases.ts`). */
  aliases: string[];
  /** Command-line flags that set it. */
  flags: string[];
  /** Environment variables that set it. */
  env: string[];
  /** How the run-management API shows it, when it does (see {@link RunApiMeta}). */
  runApi?: RunApiMeta;
}

/** A section of the configuration (`policy`, `rollout`, ...). */
export interface ConfigSection {
  name: string;
  description: string;
  /** `null` when the section is off until one of its fields is set (`proxy`). */
  default: unknown;
}

/** What a JSON Schema node (zod's export of the config) says about a value. */
interface JsonNode {
  type?: string | string[];
  anyOf?: JsonNode[];
  enum?: unknown[];
  properties?: Record<string, JsonNode>;
  additionalProperties?: JsonNode | boolean;
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  format?: string;
  runApi?: RunApiMeta;
}

/** A node of the settings tree. */
export type SettingNode =
  | {
    kind: "section";
    nullable: boolean;
    description: string;
    fields: Record<string, SettingNode>;
  }
  | { kind: "map"; description: string; value: SettingNode; default: unknown }
  | {
    kind: "leaf";
    /** How a string from a flag, variable or override is read. */
    read: "integer" | "number" | "boolean" | "string";
    nullable: boolean;
    type: string;
    /** The values of a choice. */
    choices?: string[];
    description: string;
    default: unknown;
    runApi?: RunApiMeta;
  };

type Section = Extract<SettingNode, { kind: "section" }>;

/** The settings tree of {@link TrainConfigSchema}. */
export const SETTINGS: Section = toNode(
  z.toJSONSchema(TrainConfigSchema, { io: "input" }) as JsonNode,
  "",
) as Section;

function toNode(raw: JsonNode, description: string): SettingNode {
  const variants = raw.anyOf ?? [raw];
  const nullable = variants.some((v) => v.type === "null") ||
    (Array.isArray(raw.type) && raw.type.includes("null"));
  const node = { ...variants.find((v) => v.type !== "null")!, ...pick(raw) };
  const desc = raw.description ?? description;
  const type = Array.isArray(node.type) ? node.type.find((t) => t !== "null") : node.type;
  if (type === "object" && node.properties) {
    const fields: Record<string, SettingNode> = {};
    for (const [k, v] of Object.entries(node.properties)) fields[k] = toNode(v, "");
    return { kind: "section", nullable, description: desc, fields };
  }
  if (type === "object") {
    const value = toNode(node.additionalProperties as JsonNode, "");
    return { kind: "map", description: desc, value, default: raw.default };
  }
  const read = type === "integer" || type === "number" || type === "boolean" ? type : "string";
  return {
    kind: "leaf",
    read,
    nullable,
    type: typeText(node, type ?? "string") + (nullable ? " | null" : ""),
    ...(node.enum ? { choices: node.enum.map(String) } : {}),
    description: desc,
    default: raw.default,
    ...(node.runApi ? { runApi: node.runApi } : {}),
  };
}

function pick(raw: JsonNode): JsonNode {
  const { default: d, description, runApi } = raw;
  return {
    ...(d === undefined ? {} : { default: d }),
    ...(description ? { description } : {}),
    ...(runApi ? { runApi } : {}),
  };
}

function typeText(n: JsonNode, type: string): string {
  if (n.enum) return n.enum.join(" | ");
  if (n.format === "uri") return "url";
  if (type !== "integer" && type !== "number") return type;
  // An integer's safe-integer range is no constraint worth showing.
  const bound = (x?: number) => x !== undefined && Math.abs(x) < Number.MAX_SAFE_INTEGER;
  const lo = bound(n.exclusiveMinimum)
    ? n.exclusiveMinimum
    : bound(n.minimum)
    ? n.minimum
    : undefined;
  const hi = bound(n.maximum) ? n.maximum : undefined;
  const open = lo !== undefined && lo === n.exclusiveMinimum;
  if (lo !== undefined && hi !== undefined) return `${type} in ${open ? "(" : "["}${lo}, ${hi}]`;
  if (lo !== undefined) return `${type} ${open ? ">" : ">="} ${lo}`;
  if (hi !== undefined) return `${type} <= ${hi}`;
  return type;
}

/** The top-level sections, in schema order. */
export function listConfigSections(): ConfigSection[] {
  return Object.entries(SETTINGS.fields).flatMap(([name, node]) =>
    node.kind === "leaf" ? [] : [{
      name,
      description: node.description,
      default: node.kind === "map" ? node.default : node.nullable ? null : defaultsOf(node),
    }]
  );
}

/** The names other than its path that set a field, by path. */
function aliasesByPath(): Map<string, string[]> {
  const by = new Map<string, string[]>();
  for (const [name, a] of Object.entries(CONFIG_ALIASES)) {
    by.set(a.path, [...(by.get(a.path) ?? []), name]);
  }
  return by;
}

/** `--rollout.group-size` for a path or `--group-size` for an alias. */
export function flagName(name: string): string {
  return `--${name.replaceAll("_", "-")}`;
}

/** `TINKERBENCH_ROLLOUT__GROUP_SIZE` for a path, `TINKERBENCH_GROUP_SIZE` for an alias. */
export function envName(name: string): string {
  return ENV_PREFIX + name.replaceAll(".", "__").toUpperCase();
}

/**
 * Every leaf field with its dotted path, type, default, description, aliases, flags and
 * environment variables, in schema order.
 *
 * @example
 * listConfigFields().find((f) => f.path === "rollout.group_size");
 * // { type: "integer in [1, 1024]", default: 4, aliases: ["group_size"], flags: ["--rollout.group-size",
 * //   "--group-size"], env: ["TINKERBENCH_ROLLOUT__GROUP_SIZE", "TINKERBENCH_GROUP_SIZE"], ... }
 */
export function listConfigFields(): ConfigField[] {
  const aliases = aliasesByPath();
  const out: ConfigField[] = [];
  const visit = (node: SettingNode, path: string) => {
    if (node.kind === "section") {
      for (const [k, v] of Object.entries(node.fields)) visit(v, path ? `${path}.${k}` : k);
      return;
    }
    if (node.kind === "map" && node.value.kind === "section") {
      return visit(node.value, `${path}.<name>`);
    }
    const names = aliases.get(path) ?? [];
    const settable = !path.includes("<name>");
    const flat = names.filter((n) => !n.includes("."));
    const envAliases = Object.entries(CONFIG_ENV_ALIASES)
      .filter(([, alias]) => names.includes(alias)).map(([v]) => v);
    out.push({
      path,
      type: node.kind === "map"
        ? `map of string to ${(node.value as { type: string }).type}`
        : node.type,
      default: node.default,
      description: node.description,
      aliases: names,
      flags: settable ? [path, ...flat].map(flagName) : [],
      env: settable ? [...[path, ...flat].map(envName), ...envAliases] : [],
      ...(node.kind === "leaf" && node.runApi ? { runApi: node.runApi } : {}),
    });
  };
  visit(SETTINGS, "");
  return out;
}

/**
 * The default value of a setting; for a section, its fields' defaults (a nullable section
 * inside it, `proxy`, stays null).
 */
export function defaultsOf(node: SettingNode): unknown {
  if (node.kind !== "section") return structuredClone(node.default);
  return Object.fromEntries(
    Object.entries(node.fields).map((
      [k, v],
    ) => [k, v.kind === "section" && v.nullable ? null : defaultsOf(v)]),
  );
}

/**
 * The zod schema of a leaf setting by its dotted path (without its default, so a missing value
 * is refused), to check one value as the whole config's parse would.
 *
 * @example
 * settingSchema("rollout.temperature").safeParse(-1).success; // false
 */
export function settingSchema(path: string): z.ZodType {
  let node: z.ZodType = TrainConfigSchema;
  for (const seg of path.split(".")) {
    node = unwrap(node);
    if (!(node instanceof z.ZodObject)) throw new Error(`${path}: not a path of the config`);
    const next = (node.shape as Record<string, z.ZodType>)[seg];
    if (!next) throw new Error(`${path}: not a path of the config`);
    node = next;
  }
  return node instanceof z.ZodDefault ? node.removeDefault() as z.ZodType : node;
}

/** A section's object schema under its default or nullable wrapper. */
function unwrap(node: z.ZodType): z.ZodType {
  for (;;) {
    if (node instanceof z.ZodPrefault || node instanceof z.ZodDefault) {
      node = node.unwrap() as z.ZodType;
    } else if (node instanceof z.ZodNullable) node = node.unwrap() as z.ZodType;
    else return node;
  }
}

/** A name resolved to its place in the config. */
export interface Resolved {
  /** Canonical path segments. */
  path: string[];
  node: SettingNode;
  /** Set when the name was an alias. */
  alias?: ConfigAlias;
}

/**
 * Resolves a name as written (a dotted path, an alias, kebab-case) to its path; throws an
 * `Error` whose message names the problem (the caller adds where the name came from).
 *
 * @example
 * resolveName("group-size").path; // ["rollout", "group_size"]
 * resolveName("rollout.group_size").path; // the same
 */
export function resolveName(name: string): Resolved {
  const entry = entryAlias(name.replaceAll("-", "_"));
  const alias = CONFIG_ALIASES[name] ?? CONFIG_ALIASES[name.replaceAll("-", "_")] ?? entry;
  if (alias) {
    const r = walk(alias.path.split("."));
    if (typeof r === "string") throw new Error(`alias ${name}: ${r}`); // a broken table
    return { ...r, alias };
  }
  const r = walk(name.split("."));
  if (typeof r === "string") throw new Error(r);
  return r;
}

/**
 * The alias of a map entry's field (`environments.<name>.nonterminal_reward`) that `name`
 * (`environments.Acme/Env.nonterminal_reward`) matches, its path with the entry's name in.
 */
function entryAlias(name: string): ConfigAlias | undefined {
  for (const [key, a] of Object.entries(CONFIG_ALIASES)) {
    const at = key.indexOf(".<name>.");
    if (at < 0) continue;
    const map = key.slice(0, at + 1);
    const field = key.slice(at + ".<name>".length);
    if (!name.startsWith(map) || !name.endsWith(field)) continue;
    const entry = name.slice(map.length, name.length - field.length);
    if (entry === "" || entry.includes(".")) continue;
    return { ...a, path: a.path.replace("<name>", entry) };
  }
  return undefined;
}

/**
 * The old names of a map section's entry fields by the field they set (`nonterminal_reward` →
 * `unfinished_reward` for `environments`), from the `<name>` aliases.
 */
export function entryFieldAliases(mapPath: string): Map<string, string> {
  const out = new Map<string, string>();
  const prefix = `${mapPath}.<name>.`;
  for (const [key, a] of Object.entries(CONFIG_ALIASES)) {
    if (key.startsWith(prefix) && a.path.startsWith(prefix)) {
      out.set(key.slice(prefix.length), a.path.slice(prefix.length));
    }
  }
  return out;
}

/** The node at a path, or what is wrong with the path. */
function walk(segments: string[]): Resolved | string {
  let node: SettingNode = SETTINGS;
  const path: string[] = [];
  for (const raw of segments) {
    if (node.kind === "leaf") {
      return `${path.join(".")} is a setting, not a section (in ${segments.join(".")})`;
    }
    if (node.kind === "map") {
      if (raw === "") return `empty name in ${segments.join(".")}`;
      path.push(raw); // an entry's name, as written
      node = node.value;
      continue;
    }
    const fields: Record<string, SettingNode> = node.fields;
    const seg: string = raw in fields ? raw : raw.replaceAll("-", "_");
    if (!(seg in fields)) return unknownMessage(segments.join("."));
    path.push(seg);
    node = fields[seg];
  }
  return { path, node };
}

function unknownMessage(name: string): string {
  const why = UNSUPPORTED_SEED_NAMES[name.replaceAll("-", "_")];
  if (why) return `unsupported setting ${name}: ${why}`;
  const guess = suggest(name);
  const shown = guess && (guess.name === guess.path ? guess.name : `${guess.name} (${guess.path})`);
  return `unknown setting ${name}${shown ? ` (did you mean ${shown}?)` : ""}`;
}

/**
 * The closest known name (a path, a section or an alias) and its path, if one is close enough
 * to be a typo of `name`.
 *
 * @example
 * suggest("lora_rnk"); // { name: "lora_rank", path: "policy.lora_rank" }
 * suggest("policy.group_size"); // { name: "rollout.group_size", path: "rollout.group_size" }
 */
export function suggest(name: string): { name: string; path: string } | undefined {
  const key = name.replaceAll("-", "_");
  const last = key.split(".").at(-1)!;
  let best: { name: string; path: string; d: number } | undefined;
  const consider = (candidate: string, path: string) => {
    // The right field under the wrong section is as close as a one-letter typo.
    const sameField = candidate.split(".").at(-1) === last && key !== candidate;
    const d = Math.min(editDistance(key, candidate), sameField ? 1 : Infinity);
    if (!best || d < best.d) best = { name: candidate, path, d };
  };
  for (const f of listConfigFields()) consider(f.path, f.path);
  for (const s of listConfigSections()) consider(s.name, s.name);
  for (const [alias, a] of Object.entries(CONFIG_ALIASES)) consider(alias, a.path);
  if (!best || best.d > Math.max(2, Math.floor(key.length / 4))) return undefined;
  return { name: best.name, path: best.path };
}
