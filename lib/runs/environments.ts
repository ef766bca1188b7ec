/**
 * The environments an agent can pick: every id in the registry (built-in games and tasks, and
 * any environment registered at run time), with the class that implements it, the module that
 * defines the class and a one-sentence description taken from that module's documentation (the
 * way the Hermes tools read an environment's docstring).
 *
 * @module
 */

import { join, relative } from "node:path";
import { fileURLToPath as fromFileUrl } from "node:url";
import { listEnvs, make } from "../envs/registry.ts";

/** An environment as `GET /environments` lists it. */
export interface EnvironmentInfo {
  /** The registry id, e.g. `game:GuessTheNumber-v0-easy`; what `select` takes. */
  name: string;
  class_name: string;
  /** The module that defines the class, relative to the repository (null when not found). */
  file_path: string | null;
  description: string;
}

const REPO = fromFileUrl(new URL("../../", import.meta.url));
const ENVS_DIR = fromFileUrl(new URL("../envs/", import.meta.url));

interface ClassSource {
  file: string;
  doc: string;
}

let sources: Map<string, ClassSource> | undefined;

/** Class name → defining module and its first documented sentence, from lib/envs/ sources. */
function classSources(): Map<string, ClassSource> {
  if (sources) return sources;
  sources = new Map();
  for (const entry of Deno.readDirSync(ENVS_DIR)) {
    if (!entry.isFile || !entry.name.endsWith(".ts")) continue;
    const path = join(ENVS_DIR, entry.name);
    const text = Deno.readTextFileSync(path);
    const doc = firstSentence(/^\/\*\*([\s\S]*?)\*\//.exec(text)?.[1] ?? "");
    for (const m of text.matchAll(/^export (?:abstract )?class (\w+)/gm)) {
      sources.set(m[1], { file: relative(REPO, path), doc });
    }
  }
  return sources;
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

/** Describes one registered environment. */
export function describeEnvironment(id: string): EnvironmentInfo {
  const className = make(id).constructor.name;
  const source = classSources().get(className);
  const doc = source?.doc || `${className}, registered at run time.`;
  return {
    name: id,
    class_name: className,
    file_path: source?.file ?? null,
    description: doc.replace(/\.$/, "") + variantNote(id) + ".",
  };
}

/** Every registered environment, in registry order. */
export function listEnvironments(): EnvironmentInfo[] {
  return listEnvs().map(describeEnvironment);
}

/**
 * The registered id a name refers to: the id itself, or a unique case-insensitive match of the
 * id or of its part after the `family:` prefix (`GuessTheNumber-v0-easy`). Null when none or
 * several match.
 */
export function resolveEnvironment(name: string): string | null {
  const ids = listEnvs();
  if (ids.includes(name)) return name;
  const lower = name.toLowerCase();
  const matches = ids.filter((id) =>
    id.toLowerCase() === lower || id.slice(id.indexOf(":") + 1).toLowerCase() === lower
  );
  return matches.length === 1 ? matches[0] : null;
}
