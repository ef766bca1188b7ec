/**
 * The static import graph of a source folder, read from the files' import and export
 * statements, for tests that guard the layering (no loops, one-way dependencies).
 *
 * @module
 */

import { dirname, join, relative, resolve } from "node:path";

/** Files (relative to the repository root) and the local files each one imports. */
export type ImportGraph = Map<string, string[]>;

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), "..");
// `import … from "./x.ts"`, `export … from "./x.ts"`, `import "./x.ts"`, `import type …` alike.
const SPECIFIER = /(?:^|\n)\s*(?:import|export)\b[^;"]*?["'](\.{1,2}\/[^"']+)["']/g;
// `await import("./x.ts")`: a lazy import is a dependency too.
const DYNAMIC = /\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;
// A relative path to a script in any string (`new URL("../../scripts/train.ts", import.meta.url)`,
// a command to spawn): running a file is depending on it, as importing it is.
const SCRIPT_PATH = /["'`]((?:\.{1,2}\/)+scripts\/[^"'`]+)["'`]/g;

/**
 * The import graph of every `.ts` file under `folders` (paths from the repository root);
 * imports of files outside those folders are left out. A relative path to a file of `scripts/`
 * written in a string counts as an import of it (a spawned script is a dependency too).
 *
 * @example
 * const graph = await importGraph(["lib/tinker"]);
 * graph.get("lib/tinker/mod.ts"); // ["lib/tinker/service_client.ts", …]
 */
export async function importGraph(folders: string[]): Promise<ImportGraph> {
  const files: string[] = [];
  for (const f of folders) await collect(join(ROOT, f), files);
  const known = new Set(files);
  const graph: ImportGraph = new Map();
  for (const file of files) {
    const text = await Deno.readTextFile(file);
    const deps = [
      ...text.matchAll(SPECIFIER),
      ...text.matchAll(DYNAMIC),
      ...text.matchAll(SCRIPT_PATH),
    ]
      .map((m) => resolve(dirname(file), m[1]))
      .filter((d) => known.has(d));
    graph.set(relative(ROOT, file), [...new Set(deps)].map((d) => relative(ROOT, d)));
  }
  return graph;
}

/** Every import loop of `graph` found by a depth-first walk, each as its files in order. */
export function importLoops(graph: ImportGraph): string[][] {
  const loops: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (file: string) => {
    const at = path.indexOf(file);
    if (at >= 0) {
      loops.push([...path.slice(at), file]);
      return;
    }
    if (done.has(file)) return;
    path.push(file);
    for (const dep of graph.get(file) ?? []) visit(dep);
    path.pop();
    done.add(file);
  };
  for (const file of graph.keys()) visit(file);
  return loops;
}

async function collect(dir: string, out: string[]): Promise<void> {
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory) await collect(path, out);
    else if (e.name.endsWith(".ts")) out.push(path);
  }
}
