/**
 * The layout rules of docs/architecture.md, checked: no import loop anywhere in lib/, the bottom
 * layers import nothing above them, and mod.ts files only re-export.
 */

import { assert } from "./assert.ts";
import { importGraph, importLoops } from "./import_graph.ts";

Deno.test("architecture: no import loops in lib/", async () => {
  const loops = importLoops(await importGraph(["lib"]));
  assert.deepEqual(loops.map((l) => l.join(" -> ")), []);
});

Deno.test("architecture: lib/util imports nothing of lib/; lib/rl only renderer types and util", async () => {
  const graph = await importGraph(["lib"]);
  const bad = [...graph].flatMap(([file, deps]) => {
    const allowed = file.startsWith("lib/util/")
      ? ["lib/util/"]
      : file.startsWith("lib/rl/")
      ? ["lib/rl/", "lib/util/", "lib/renderers/"]
      : null;
    return allowed
      ? deps.filter((d) => d.startsWith("lib/") && !allowed.some((a) => d.startsWith(a)))
        .map((d) => `${file} -> ${d}`)
      : [];
  });
  assert.deepEqual(bad, []);
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
