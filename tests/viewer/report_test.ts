import { basename, dirname, join } from "node:path";
import { assert } from "../assert.ts";
import { writeRunReport } from "../../lib/viewer/report.ts";
import { ASSETS_DIR } from "../../lib/viewer/mod.ts";

const rows = [1, 2, 3].map((step) => ({
  step,
  "env/all/reward/total": step / 10,
  "env/all/success": step / 3,
  "train/loss:sum": -step,
  "time/step": 1,
}));

/** The data embedded in a viewer page. */
function embedded(page: string) {
  const m = /<script id="tb-data" type="application\/json">(.*?)<\/script>/s.exec(page);
  assert.ok(m, "the page embeds its data");
  return JSON.parse(m[1]);
}

async function runDir(root: string, name: string, r: Record<string, unknown>[]) {
  const dir = join(root, name);
  await Deno.mkdir(dir);
  await Deno.writeTextFile(join(dir, "metrics.jsonl"), r.map((x) => JSON.stringify(x)).join("\n"));
  return dir;
}

Deno.test("report: a run's page in its directory, plotly.js and viewer.js shared in the runs root", async () => {
  const root = await Deno.makeTempDir();
  const a = await runDir(root, "a", rows), b = await runDir(root, "b", rows);
  const page = await writeRunReport(a);
  assert.equal(page, join(a, "report.html"));
  await writeRunReport(b);
  const html = await Deno.readTextFile(page);
  assert.match(html, /<title>a: 3 steps<\/title>/);
  assert.ok(html.includes(`<script src="../${ASSETS_DIR}/plotly.min.js">`));
  assert.ok(html.includes(`<script src="../${ASSETS_DIR}/viewer.js">`));
  assert.ok(html.length < 100_000, `${html.length} bytes: plotly.js is not inlined`);
  const plotly = await Deno.stat(join(root, ASSETS_DIR, "plotly.min.js"));
  assert.ok(plotly.size > 1_000_000);
  // The library compiled for the browser (why nothing trained, what-if), beside them.
  assert.ok(html.includes(`<script src="../${ASSETS_DIR}/tinkerbench.js">`));
  const lib = await Deno.readTextFile(join(root, ASSETS_DIR, "tinkerbench.js"));
  assert.match(lib, /tinkerbench/);
  const titles = embedded(html).figures.map((f: { layout: { title: { text: string } } }) =>
    f.layout.title.text
  );
  assert.deepEqual(titles, [
    "Reward",
    "Success rate",
    "Loss (sum over tokens)",
    "Time per step (s)",
  ]);
});

Deno.test("report: step axes tick at whole steps only", async () => {
  const root = await Deno.makeTempDir();
  const two = await runDir(root, "two", rows.slice(0, 2));
  const data = embedded(await Deno.readTextFile(await writeRunReport(two)));
  const x = data.figures[0].layout.xaxis;
  assert.deepEqual([x.tickmode, x.dtick, x.tickformat], ["linear", 1, "d"]);
  const many = await runDir(
    root,
    "many",
    Array.from({ length: 95 }, (_, i) => ({ ...rows[0], step: i + 1 })),
  );
  const x2 = embedded(await Deno.readTextFile(await writeRunReport(many))).figures[0].layout.xaxis;
  assert.equal(x2.dtick, 10);
});

Deno.test("report: runs of different methods compare; a metric a run lacks is left out and noted", async () => {
  const root = await Deno.makeTempDir();
  const rl = await runDir(root, "rl-run", rows.map((r) => ({ ...r, "advantage/mean": 0.1 })));
  const opd = await runDir(
    root,
    "opd-run",
    rows.map((r) => ({ ...r, "score/opd_advantage_mean": -0.5 })),
  );
  const cmp = await writeRunReport([rl, opd]);
  assert.equal(dirname(cmp), root, "the comparison is not written into a run's directory");
  assert.equal(basename(cmp), "comparison-rl-run-vs-opd-run.html");
  const data = embedded(await Deno.readTextFile(cmp));
  assert.ok(data.notes.includes("Advantages: advantage mean: not logged by opd-run"), data.notes);
  const adv = data.figures.find((f: { layout: { title: { text: string } } }) =>
    f.layout.title.text.startsWith("Advantages: advantage mean")
  );
  assert.deepEqual(adv.data.map((t: { name: string }) => t.name), ["rl-run"]);
  const reward = data.figures.find((f: { layout: { title: { text: string } } }) =>
    f.layout.title.text === "Reward"
  );
  assert.deepEqual(reward.data.map((t: { name: string }) => t.name), ["rl-run", "opd-run"]);
  const out = join(await Deno.makeTempDir(), "sub", "cmp.html");
  await Deno.mkdir(dirname(out));
  assert.equal(await writeRunReport([rl, opd], { out }), out);
  assert.ok((await Deno.stat(join(dirname(out), ASSETS_DIR, "viewer.js"))).isFile);
});

Deno.test("report: held-out results of several runs in one chart", async () => {
  const root = await Deno.makeTempDir();
  const dirs = [];
  for (const [name, base, trained] of [["r1", 0.2, 0.5], ["r2", 0.2, 0.7]] as const) {
    const dir = await runDir(root, name, rows);
    await Deno.writeTextFile(
      join(dir, "eval.json"),
      JSON.stringify({
        env_id: "debug:X",
        model: "local/tiny",
        episodes: 8,
        env_seeds: [1000000, 1000007],
        sampler_seed: 5000000,
        temperature: 1,
        step: 3,
        base: { success: base, mean_reward: base, episodes: 8 },
        trained: { success: trained, mean_reward: trained, episodes: 8 },
        seconds: 1,
      }),
    );
    dirs.push(dir);
  }
  const data = embedded(await Deno.readTextFile(await writeRunReport(dirs)));
  const fig = data.figures[0];
  assert.match(fig.layout.title.text, /^Held-out success/);
  assert.deepEqual(fig.data.map((t: { y: number[] }) => t.y), [[0.2, 0.2], [0.5, 0.7]]);
  assert.deepEqual(fig.data[0].x, ["r1 (3 steps)", "r2 (3 steps)"]);
});

Deno.test("report: an rl, an opd and a combine run compare (the metrics each method logs)", async () => {
  const root = await Deno.makeTempDir();
  const common = (step: number) => ({ ...rows[step - 1], "optim/entropy": 0.1 * step });
  const rlKeys = ["advantage/mean", "advantage/std", "advantage/min", "advantage/max"];
  const opdKeys = ["score/opd_advantage_mean", "score/hint_accepted_frac"];
  const run = (name: string, keys: string[]) =>
    runDir(
      root,
      name,
      [1, 2].map((step) => ({
        ...common(step),
        ...Object.fromEntries(keys.map((k) => [k, -step])),
      })),
    );
  const dirs = [
    await run("rl", rlKeys),
    await run("opd", opdKeys),
    await run("combine", [...rlKeys, ...opdKeys]),
  ];
  const data = embedded(await Deno.readTextFile(await writeRunReport(dirs)));
  const traces = (title: string) =>
    data.figures.find((f: { layout: { title: { text: string } } }) =>
      f.layout.title.text.startsWith(title)
    ).data.map((t: { name: string }) => t.name);
  assert.deepEqual(traces("Reward"), ["rl", "opd", "combine"]);
  assert.deepEqual(traces("Advantages: advantage mean"), ["rl", "combine"]);
  assert.deepEqual(traces("Judges: OPD advantage"), ["opd", "combine"]);
  assert.ok(data.notes.includes("Advantages: advantage mean: not logged by opd"), data.notes);
  assert.ok(data.notes.includes("Judges: hints accepted: not logged by rl"), data.notes);
});
