import { join } from "node:path";
import { assert } from "../assert.ts";
import { appendJsonLines, readJsonl, writeFileAtomic } from "../../lib/rundir/mod.ts";

Deno.test("writeFileAtomic: a reader sees the old file or the new one, never a mix, and no temp file stays", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "status.json");
  const a = "a".repeat(1 << 20), b = "b".repeat(1 << 20);
  await writeFileAtomic(path, a);
  let stop = false;
  const seen = new Set<string>();
  const reader = (async () => {
    while (!stop) {
      const text = await Deno.readTextFile(path);
      seen.add(text === a ? "a" : text === b ? "b" : `mixed (${text.length} bytes)`);
    }
  })();
  for (let i = 0; i < 16; i++) await writeFileAtomic(path, i % 2 ? a : b);
  stop = true;
  await reader;
  assert.deepEqual([...seen].filter((s) => s !== "a" && s !== "b"), []);
  assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["status.json"]);
});

Deno.test("appendJsonLines: lines appended at once by many writers stay whole", async () => {
  const path = join(await Deno.makeTempDir(), "metrics.jsonl");
  const row = (w: number, i: number) => ({ step: i, writer: w, pad: "x".repeat(5000 + w) });
  await Promise.all(
    Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; i < 25; i++) await appendJsonLines(path, [row(w, i)]);
    }),
  );
  // Strict read: a line two writers had interleaved would be an error.
  const rows = await readJsonl<{ writer: number }>(path);
  assert.equal(rows.length, 200);
  for (let w = 0; w < 8; w++) assert.equal(rows.filter((r) => r.writer === w).length, 25);
});
