/**
 * The environments an agent can pick: every id in the registry (built-in games and tasks, and
 * the environments of modules loaded with `deno task runs --env-module`), with the class that
 * implements it, the module that defines the class and a one-sentence description taken from
 * that module's documentation (the way the Hermes tools read an environment's docstring).
 *
 * @module
 */

import { isAbsolute, join, relative, resolve } from "node:path";
import { fileURLToPath as fromFileUrl } from "node:url";
import { listEnvs, make } from "../envs/registry.ts";
import { EnvModuleError, importEnvModule } from "../envs/modules.ts";
import type { Environment } from "./schemas.ts";

const REPO = fromFileUrl(new URL("../../", import.meta.url));
const ENVS_DIR = fromFileUrl(new URL("../envs/", import.meta.url));

/** Environment id → the absolute path of the module that registered it. */
const MODULES = new Map<string, string>();

/** What a source file tells: its first documented sentence and the classes it defines. */
interface SourceInfo {
  doc: string;
  classes: string[];
}

const sources = new Map<string, SourceInfo>();

function sourceInfo(path: string): SourceInfo {
  let info = sources.get(path);
  if (!info) {
    const text = Deno.readTextFileSync(path);
    info = {
      doc: firstSentence(/^\/\*\*([\s\S]*?)\*\//.exec(text)?.[1] ?? ""),
      classes: [...text.matchAll(/^(?:export )?(?:abstract )?class (\w+)/gm)].map((m) => m[1]),
    };
    sources.set(path, info);
  }
  return info;
}

/** The lib/envs/ module that defines a class, if any. */
function builtinSource(className: string): string | null {
  for (const entry of Deno.readDirSync(ENVS_DIR)) {
    if (!entry.isFile || !entry.name.endsWith(".ts")) continue;
    const path = join(ENVS_DIR, entry.name);
    if (sourceInfo(path).classes.includes(className)) return path;
  }
  return null;
}

function firstSentence(jsdoc: string): string {
  const text = jsdoc.split("\n").map((l) => l.replace(/^\s*\*\s?/, "")).join("\n").trim();
  const paragraph = text.split(/\n\s*\n/)[0].replace(/\s+/g, " ").trim();
  const end = paragraph.search(/\.(\s|$)/);
  return end < 0 ? paragraph : paragraph.slice(0, end + 1);
}

/** Variant words of an id (`-easy`, `-hard`, `-random`) as a phrase. */
function variantNote(id: string): string {
  const level = /-(easy|hard|random)$/.exec(id)?.[1];
  if (!level) return "";
  return level === "random"
    ? " (variant: random, easy or hard per episode)"
    : ` (${level} variant)`;
}

function shownPath(path: string): string {
  const rel = relative(REPO, path);
  return rel.startsWith("..") || isAbsolute(rel) ? path : rel;
}

/**
 * Imports a module that registers environments (as `deno task train --env-module` does) and
 * remembers which ids it registered, so runs on them load it too. Returns those ids.
 */
export async function loadEnvModule(path: string): Promise<string[]> {
  const abs = resolve(path);
  const before = new Set(listEnvs());
  await importEnvModule(abs);
  const added = listEnvs().filter((id) => !before.has(id));
  for (const id of added) MODULES.set(id, abs);
  const known = [...MODULES].filter(([, m]) => m === abs).map(([id]) => id);
  if (known.length === 0) {
    throw new EnvModuleError(`env_module ${path}: it registers no environment`);
  }
  return known;
}

/** The module that registered an environment (null for built-in ones). */
export function envModuleOf(id: string): string | null {
  return MODULES.get(id) ?? null;
}

/** Describes one registered environment. */
export function describeEnvironment(id: string): Environment {
  const className = make(id).constructor.name;
  const path = envModuleOf(id) ?? builtinSource(className);
  const doc = path ? sourceInfo(path).doc : "";
  return {
    name: id,
    class_name: className,
    file_path: path ? shownPath(path) : null,
    description: (doc || `${className}, registered at run time.`).replace(/\.$/, "") +
      variantNote(id) + ".",
  };
}

/** Every registered environment, in registry order. */
export function listEnvironments(): Environment[] {
  return listEnvs().map(describeEnvironment);
}

/**
 * The registered id a name refers to: the id itself, or a case-insensitive match of the id or of
 * its part after the `family:` prefix (`GuessTheNumber-v0-easy`). When several families share the
 * name (a game and its `tool:` twin), the first registered wins: GEM's `game:` id. Null when none
 * matches.
 */
export function matchEnvironmentId(name: string): string | null {
  const ids = listEnvs();
  if (ids.includes(name)) return name;
  const lower = name.toLowerCase();
  const matches = ids.filter((id) =>
    id.toLowerCase() === lower || id.slice(id.indexOf(":") + 1).toLowerCase() === lower
  );
  return matches[0] ?? null;
}
