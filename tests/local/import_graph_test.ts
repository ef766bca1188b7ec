import { assert } from "../assert.ts";
import { type ImportGraph, importGraph, importLoops } from "../import_graph.ts";

/** The imports from `files` into `into` (path prefixes), as "file -> dependency". */
function importsInto(graph: ImportGraph, files: (f: string) => boolean, into: string[]) {
  return [...graph].flatMap(([file, deps]) =>
    files(file)
      ? deps.filter((d) => into.some((p) => d.startsWith(p))).map((d) => `${file} -> ${d}`)
      : []
  );
}

// connectTinker starts a server for a client, and lib/local/mod.ts is the package's entry: both
// are above the HTTP layer, not below it.
const SERVER_USERS = new Set(["lib/local/connect.ts", "lib/local/mod.ts"]);

Deno.test("import graph: no import loops in lib/local or lib/tinker", async () => {
  const loops = importLoops(await importGraph(["lib/local", "lib/tinker"]));
  assert.deepEqual(loops.map((l) => l.join(" -> ")), []);
});

Deno.test("import graph: the HTTP layer (lib/local/server) depends on the backend, never the reverse", async () => {
  const graph = await importGraph(["lib/local"]);
  const below = (f: string) => !f.startsWith("lib/local/server/") && !SERVER_USERS.has(f);
  assert.deepEqual(importsInto(graph, below, ["lib/local/server/"]), []);
});

Deno.test("import graph: the runtime (futures, queue, ordering) knows nothing of the backend", async () => {
  const graph = await importGraph(["lib/local"]);
  const runtime = (f: string) => f.startsWith("lib/local/runtime/");
  const above = ["lib/local/backend", "lib/local/server/"];
  assert.deepEqual(importsInto(graph, runtime, above), []);
});

Deno.test("import graph: finds a loop and a one-way chain for what they are", async () => {
  const loops = importLoops(
    new Map([["a.ts", ["b.ts"]], ["b.ts", ["c.ts"]], ["c.ts", ["a.ts"]], ["d.ts", ["a.ts"]]]),
  );
  assert.deepEqual(loops, [["a.ts", "b.ts", "c.ts", "a.ts"]]);
  assert.deepEqual(importLoops(new Map([["a.ts", ["b.ts"]], ["b.ts", []]])), []);
  // The lazy import of connect.ts is seen: without the exemption it would be reported.
  const graph = await importGraph(["lib/local"]);
  assert.deepEqual(
    importsInto(graph, (f) => f === "lib/local/connect.ts", ["lib/local/server/"]),
    ["lib/local/connect.ts -> lib/local/server/mod.ts"],
  );
});
