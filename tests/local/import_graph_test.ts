import { assert } from "../assert.ts";
import { importGraph, importLoops } from "./import_graph.ts";

Deno.test("import graph: no import loops in lib/local or lib/tinker", async () => {
  const loops = importLoops(await importGraph(["lib/local", "lib/tinker"]));
  assert.deepEqual(loops.map((l) => l.join(" -> ")), []);
});

Deno.test("import graph: the HTTP layer (lib/local/server) depends on the backend, never the reverse", async () => {
  const graph = await importGraph(["lib/local"]);
  const inward = [...graph].flatMap(([file, deps]) =>
    file.startsWith("lib/local/server/")
      ? []
      : deps.filter((d) => d.startsWith("lib/local/server/")).map((d) => `${file} -> ${d}`)
  );
  assert.deepEqual(inward, []);
});

Deno.test("import graph: finds a loop and a one-way chain for what they are", () => {
  const loops = importLoops(
    new Map([["a.ts", ["b.ts"]], ["b.ts", ["c.ts"]], ["c.ts", ["a.ts"]], ["d.ts", ["a.ts"]]]),
  );
  assert.deepEqual(loops, [["a.ts", "b.ts", "c.ts", "a.ts"]]);
  assert.deepEqual(importLoops(new Map([["a.ts", ["b.ts"]], ["b.ts", []]])), []);
});
