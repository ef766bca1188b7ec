import { assert } from "../assert.ts";
import {
  advantageHeatmapFigure,
  figuresToHtml,
  logprobGap,
  logprobScatterFigure,
  metricLineFigure,
  plotlyBundle,
  rewardSpreadFigure,
  runsComparisonFigure,
  tokenAdvantagesFrame,
} from "../../lib/viz/mod.ts";
import { trajectoryToDatums } from "../../lib/datums/mod.ts";
import { episodeTurnTokens } from "../../lib/datums/mod.ts";
import { renderer, scriptedEpisode } from "./episodes.ts";

const rows = [
  { step: 1, loss: 3, reward: 0.1 },
  { step: 2, loss: 2 },
  { step: 3, loss: 1.5, reward: 0.4 },
];

Deno.test("metricLineFigure: a scatter trace per key, gaps skipped, unknown key named", () => {
  const fig = metricLineFigure(rows, ["loss", "reward"]);
  assert.deepEqual(fig.data.map((t) => [t.type, t.name]), [["scatter", "loss"], [
    "scatter",
    "reward",
  ]]);
  assert.deepEqual(fig.data[0].x, [1, 2, 3]);
  assert.deepEqual(fig.data[1].x, [1, 3]);
  assert.deepEqual(fig.data[1].y, [0.1, 0.4]);
  assert.throws(
    () => metricLineFigure(rows, ["los"]),
    /metric "los" is in no row \(logged keys: step, loss, reward\)/,
  );
  const cmp = runsComparisonFigure(
    [{ name: "a", rows }, { name: "b", rows: rows.slice(0, 2) }],
    "loss",
  );
  assert.deepEqual(cmp.data.map((t) => [t.name, (t.y as number[]).length]), [["a", 3], ["b", 2]]);
});

Deno.test("advantageHeatmapFigure: the response's tokens in reading order, labelled", () => {
  const ep = scriptedEpisode(3, ["\\boxed{1}", "\\boxed{5}"]);
  const [d] = trajectoryToDatums(episodeTurnTokens(ep, -0.5));
  const frame = tokenAdvantagesFrame(d, renderer.tokenizer);
  const actions = ep.turns.reduce((a, t) => a + t.actionTokens.length, 0);
  const fig = advantageHeatmapFigure(frame, { width: 8 });
  assert.equal(fig.data.length, 1);
  const [trace] = fig.data;
  assert.equal(trace.type, "heatmap");
  const z = trace.z as (number | null)[][];
  assert.equal(z.length, Math.ceil(actions / 8));
  assert.ok(z.every((r) => r.length === 8));
  assert.equal(z.flat().filter((v) => v !== null).length, actions);
  assert.ok(z.flat().every((v) => v === null || v === -0.5));
  assert.deepEqual((trace.text as string[][])[0].slice(0, 4), ["\\", "b", "o", "x"]);
  const all = advantageHeatmapFigure(frame, { width: 8, actionsOnly: false });
  assert.equal(
    (all.data[0].z as unknown[][]).flat().filter((v) => v !== null).length,
    frame.height,
  );
  assert.throws(() => advantageHeatmapFigure(frame, { value: "opd" }), /no column "opd"/);
});

Deno.test("rewardSpreadFigure: a box per group with every episode's reward", () => {
  const groups = [[scriptedEpisode(3, ["\\boxed{5}"]), scriptedEpisode(3, ["?"])], [
    scriptedEpisode(4, ["?"]),
  ]];
  const fig = rewardSpreadFigure(groups);
  assert.deepEqual(fig.data.map((t) => t.type), ["box", "box"]);
  assert.deepEqual(fig.data[0].y, [1, -0.1]);
  assert.deepEqual(fig.data[1].y, [-0.1]);
  assert.deepEqual(rewardSpreadFigure([[1, 0, 0]]).data[0].y, [1, 0, 0]);
});

Deno.test("logprobScatterFigure and logprobGap: aligned log-probs, the y = x line, KL estimates", () => {
  const p = [-1, -2, -0.5], q = [-1.5, -2, -0.25];
  const fig = logprobScatterFigure(p, q);
  assert.deepEqual(fig.data.map((t) => [t.type, t.mode]), [["scatter", "markers"], [
    "scatter",
    "lines",
  ]]);
  assert.deepEqual(fig.data[0].x, p);
  assert.deepEqual(fig.data[1].x, [-2, -0.25]);
  assert.throws(() => logprobScatterFigure([1], []), /1 sampler and 0 learner/);
  const gap = logprobGap(p, q);
  assert.equal(gap.tokens, 3);
  assert.ok(Math.abs(gap.kl_v1 - (0.5 + 0 - 0.25) / 3) < 1e-12);
  assert.ok(Math.abs(gap.kl_v2 - (0.125 + 0 + 0.03125) / 3) < 1e-12);
  assert.equal(gap.max_abs_diff, 0.5);
});

Deno.test("figuresToHtml: plotly.js inlined, every figure plotted, data cannot close the script", () => {
  const fig = metricLineFigure([{ step: 1, "a</script><b>": 1 }], ["a</script><b>"]);
  const html = figuresToHtml("run <1>", [fig, rewardSpreadFigure([[1, 0]])]);
  assert.ok(html.length > 1_000_000, "plotly.min.js is inlined");
  assert.ok(html.includes("<title>run &lt;1&gt;</title>"));
  assert.equal(html.match(/Plotly\.newPlot\("fig\d"/g)?.length, 2);
  assert.ok(!html.includes("a</script><b>"));
  assert.ok(!/<script[^>]+src=/.test(html), "no external script");
  assert.equal(plotlyBundle(fig)["application/vnd.plotly.v1+json"], fig);
});

Deno.test("plotlyBundle: an HTML fallback that draws the figure, with plotly.js when asked", () => {
  const fig = metricLineFigure([{ step: 1, "a</script><b>": 1 }], ["a</script><b>"]);
  const later = plotlyBundle(fig, { divId: "f1" });
  const html = later["text/html"] as string;
  assert.ok(html.startsWith('<div id="f1"'));
  assert.ok(html.includes('window.Plotly.newPlot(el, [{"type":"scatter"'));
  assert.ok(!html.includes("a</script><b>"), "figure text cannot close the script");
  assert.ok(html.length < 10_000, "a later figure does not repeat plotly.js");
  assert.equal(later["text/plain"], 'Plotly figure "a</script><b>" (1 traces: scatter)');
  const first = plotlyBundle(fig, { includePlotlyJs: true })["text/html"] as string;
  assert.ok(first.length > 1_000_000 && first.includes("window.Plotly = Plotly;"));
  assert.ok(!/<script[^>]+src=/.test(first), "no external script");
  assert.equal(first.match(/<\/script>/g)?.length, 2, "plotly.js cannot end its script early");
});
