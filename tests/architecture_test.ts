/**
 * The layout rules of docs/architecture.md, checked: no import loop anywhere in lib/, every lib/
 * folder imports exactly the folders its row of the "Folders" table says it may (the table is the
 * one source of both: a new import, or a listed one no file uses, fails here until the table
 * says so), the trainer's core reaches no integration (whatever the table says), and mod.ts
 * files only re-export.
 */

import { assert } from "./assert.ts";
import { importGraph, importLoops } from "./import_graph.ts";
import { TrainConfigSchema } from "../lib/config/mod.ts";

const DOC = new URL("../docs/architecture.md", import.meta.url);

/** The "Folders" table: each lib/ folder and the folders it may import. */
async function folderTable(): Promise<Map<string, string[]>> {
  const text = await Deno.readTextFile(DOC);
  const section = text.split(/^## Folders$/m)[1]?.split(/^## /m)[0] ?? "";
  const table = new Map<string, string[]>();
  for (const line of section.split("\n")) {
    const cells = line.split("|").slice(1, -1).map((c) => c.trim());
    if (cells.length < 3 || !cells[0].includes("`lib/")) continue;
    const imports = cells[2] === "—" ? [] : cells[2].split(",").map((s) => s.trim());
    for (const m of cells[0].matchAll(/`lib\/([a-z_]+)\/`/g)) table.set(m[1], imports);
  }
  return table;
}

/** The folders each lib/ folder's files import, as the code has it. */
async function folderImports(): Promise<Map<string, Set<string>>> {
  const graph = await importGraph(["lib"]);
  const deps = new Map<string, Set<string>>();
  for (const [file, targets] of graph) {
    const from = file.split("/")[1];
    if (!deps.has(from)) deps.set(from, new Set());
    for (const t of targets) {
      const to = t.split("/")[1];
      if (to !== from) deps.get(from)!.add(to);
    }
  }
  return deps;
}

Deno.test("architecture: no import loops in lib/", async () => {
  const loops = importLoops(await importGraph(["lib"]));
  assert.deepEqual(loops.map((l) => l.join(" -> ")), []);
});

Deno.test("architecture: docs/architecture.md's folder table lists every lib/ folder", async () => {
  const table = await folderTable();
  const folders: string[] = [];
  for await (const e of Deno.readDir(new URL("../lib", import.meta.url))) {
    if (e.isDirectory) folders.push(e.name);
  }
  assert.deepEqual([...table.keys()].sort(), folders.sort());
});

Deno.test("architecture: each lib/ folder imports exactly what the folder table says", async () => {
  const table = await folderTable();
  const actual = await folderImports();
  const wrong: string[] = [];
  for (const [folder, allowed] of table) {
    const uses = [...(actual.get(folder) ?? [])].sort();
    const listed = [...allowed].sort();
    const extra = uses.filter((u) => !listed.includes(u));
    const unused = listed.filter((l) => !uses.includes(l));
    if (extra.length) wrong.push(`lib/${folder} imports ${extra.join(", ")}, not in its row`);
    if (unused.length) wrong.push(`lib/${folder}'s row lists ${unused.join(", ")}, never imported`);
  }
  assert.deepEqual(wrong, []);
});

/**
 * The trainer's core (lib/trainer/) and what it may never reach, directly or through another
 * folder: the integrations (the backend and the servers among them) and everything built on the
 * core. Sources live above it; the backend's model check and the proxy's port check are
 * functions `train` passes to `prepareRun`.
 */
const CORE_NEVER_REACHES = [
  "local",
  "http",
  "proxy",
  "openreward",
  "sources",
  "train",
  "tracking",
  "viewer",
  "runs",
];

Deno.test("architecture: the trainer's core reaches no integration, even indirectly", async () => {
  const graph = await importGraph(["lib"]);
  const reached = new Map<string, string>(); // file -> the core file that first reaches it
  const queue = [...graph.keys()].filter((f) => f.startsWith("lib/trainer/"));
  for (const f of queue) reached.set(f, f);
  while (queue.length) {
    const file = queue.shift()!;
    for (const dep of graph.get(file) ?? []) {
      if (reached.has(dep)) continue;
      reached.set(dep, reached.get(file)!);
      queue.push(dep);
    }
  }
  const wrong = [...reached].filter(([f]) => CORE_NEVER_REACHES.includes(f.split("/")[1]))
    .map(([f, from]) => `${from} reaches ${f}`);
  assert.deepEqual(wrong, []);
});

Deno.test("architecture: every lib/**/mod.ts only re-exports", async () => {
  const offenders: string[] = [];
  for await (const path of walk("lib")) {
    if (!path.endsWith("/mod.ts")) continue;
    const code = (await Deno.readTextFile(path))
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/\/\/.*$/gm, "")
      .replace(/export\s+(type\s+)?(\*|\{[^}]*\})(\s+as\s+\w+)?\s+from\s+"[^"]+";/g, "")
      .replace(/import\s+[^;]+;/g, "")
      .trim();
    if (code) offenders.push(`${path}: ${code.slice(0, 60)}`);
  }
  assert.deepEqual(offenders, []);
});

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) yield* walk(path);
    else if (e.isFile) yield path;
  }
}

/** Folders that read run directories: they go through lib/rundir, never the trainer. */
const RUN_DIRECTORY_READERS = ["viewer", "tracking", "runs"];

Deno.test("architecture: the run directory's readers never import lib/trainer", async () => {
  const graph = await importGraph(["lib"]);
  const edges: string[] = [];
  for (const [file, targets] of graph) {
    if (!RUN_DIRECTORY_READERS.includes(file.split("/")[1])) continue;
    for (const t of targets) if (t.startsWith("lib/trainer/")) edges.push(`${file} -> ${t}`);
  }
  assert.deepEqual(edges, []);
});

Deno.test("architecture: lib/ never imports, spawns or names a file of scripts/", async () => {
  const graph = await importGraph(["lib", "scripts"]);
  const edges: string[] = [];
  for (const [file, targets] of graph) {
    if (!file.startsWith("lib/")) continue;
    for (const t of targets) if (t.startsWith("scripts/")) edges.push(`${file} -> ${t}`);
  }
  assert.deepEqual(edges, []);
});

Deno.test("architecture: a path string to scripts/ counts as an import", async () => {
  const graph = await importGraph(["tests/import_graph_fixtures", "scripts"]);
  assert.deepEqual(graph.get("tests/import_graph_fixtures/spawns_script.ts"), [
    "scripts/train.ts",
  ]);
});

/**
 * Where a run directory's file name may appear in lib/ code outside lib/rundir, and why: the
 * same name meaning another file.
 */
const OTHER_FILES_OF_THE_SAME_NAME = [
  { file: "lib/local/onnx/export.ts", name: "config.json", why: "a model's Hugging Face config" },
];

Deno.test("architecture: run directory file names are spelled out in lib/ only in lib/rundir", async () => {
  const { RUN_FILES } = await import("../lib/rundir/files.ts");
  const names = Object.values(RUN_FILES).filter((n) => n.includes("."));
  const found: string[] = [];
  for await (const path of walk("lib")) {
    if (!path.endsWith(".ts") || path.startsWith("lib/rundir/")) continue;
    // Code only: a comment naming a file documents it; it is not a second place the name is set.
    const code = (await Deno.readTextFile(path))
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
    for (const name of names) {
      const allowed = OTHER_FILES_OF_THE_SAME_NAME.some((a) => a.file === path && a.name === name);
      const spelled = new RegExp(`(?<![\\w.-])${name.replace(".", "\\.")}(?!\\w)`);
      if (!allowed && spelled.test(code)) found.push(`${path}: ${name}`);
    }
  }
  assert.deepEqual(found, []);
});

// The viewer reads run directories through lib/rundir; it recomputes advantages with the library's
// own pure composition (lib/scoring, lib/config's schema), never through the trainer.
Deno.test("architecture: the viewer's import closure holds no trainer or integration", async () => {
  const graph = await importGraph(["lib"]);
  const seen = new Set<string>();
  const stack = ["lib/viewer/mod.ts"];
  while (stack.length) {
    const file = stack.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    stack.push(...graph.get(file) ?? []);
  }
  const forbidden = ["trainer", "train", "sources", "openreward", "proxy", "runs", "tracking"];
  assert.deepEqual([...seen].filter((f) => forbidden.includes(f.split("/")[1])), []);
});

/**
 * Following `train`'s config (docs/architecture.md, "Following `train`'s config"): the lib/ files
 * `train` reaches that read the config, by naming its type or reading one of its sections off a
 * `config` or `cfg` value. lib/config, where it is defined and loaded, is left aside. Everything
 * else gets plain values `prepareRun` resolved. A run's trace crosses a subset of these (an
 * environment run neither the mix's files nor the proxy's).
 */
const CONFIG_READERS = [
  "lib/proxy/source.ts",
  "lib/sources/mix.ts",
  "lib/sources/mix_environments.ts",
  "lib/tracking/openreward_rollouts.ts",
  "lib/tracking/tracker.ts",
  "lib/train/train.ts",
  "lib/trainer/prepare.ts",
  "lib/trainer/run.ts",
];

Deno.test("architecture: following train's config crosses at most 8 lib/ files", async () => {
  const graph = await importGraph(["lib"]);
  const seen = new Set(["lib/train/train.ts"]);
  const queue = [...seen];
  while (queue.length) {
    for (const dep of graph.get(queue.shift()!) ?? []) {
      if (!seen.has(dep)) seen.add(dep) && queue.push(dep);
    }
  }
  // `seed` aside: the backend's and the faults' own configs have one too.
  const sections = Object.keys(TrainConfigSchema.shape).filter((k) => k !== "seed").join("|");
  const readsSection = new RegExp(`\\b(?:config|cfg)\\??\\.(?:${sections})\\b`);
  const readers: string[] = [];
  for (const file of seen) {
    if (file.startsWith("lib/config/")) continue;
    const text = await Deno.readTextFile(new URL(`../${file}`, import.meta.url));
    if (/\bTrainConfig\b/.test(text) || readsSection.test(text)) readers.push(file);
  }
  assert.deepEqual(readers.sort(), CONFIG_READERS);
  assert.ok(CONFIG_READERS.length <= 8);
});
