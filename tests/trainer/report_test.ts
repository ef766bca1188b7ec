import { join } from "node:path";
import { assert } from "../assert.ts";
import { runFigures, writeRunReport } from "../../lib/trainer/report.ts";

const rows = [1, 2, 3].map((step) => ({
  step,
  "env/all/reward/total": step / 10,
  "env/all/success": step / 3,
  "train/loss:sum": -step,
  "time/step": 1,
}));

Deno.test("report: a chart per logged group of metrics, none for metrics never logged", () => {
  const figs = runFigures(rows);
  const titles = figs.map((f) => (f.layout.title as { text: string }).text);
  assert.deepEqual(titles, [
    "Reward",
    "Success rate",
    "Loss (sum over tokens)",
    "Time per step (s)",
  ]);
  assert.deepEqual(figs[0].data[0].y, [0.1, 0.2, 0.3]);
});

Deno.test("report: one self-contained page per run, a comparison for several", async () => {
  const a = await Deno.makeTempDir(), b = await Deno.makeTempDir();
  for (const dir of [a, b]) {
    await Deno.writeTextFile(
      join(dir, "metrics.jsonl"),
      rows.map((r) => JSON.stringify(r)).join("\n"),
    );
  }
  const page = await Deno.readTextFile(await writeRunReport(a));
  assert.match(page, /<title>[^<]*3 steps<\/title>/);
  assert.equal(page.match(/Plotly\.newPlot/g)?.length, 4);
  const cmp = await writeRunReport(a, b);
  assert.equal(cmp, join(a, "comparison.html"));
  assert.match(await Deno.readTextFile(cmp), /"name":"[^"]+"/);
});
