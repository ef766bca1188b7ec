import { join } from "node:path";
import { assert } from "../assert.ts";
import {
  episodesViewerData,
  loadViewerData,
  readEpisodes,
  viewerEmbedHtml,
} from "../../lib/viewer/mod.ts";
import { getTokenizer } from "../../lib/tokenizers/mod.ts";
import { ACTION, fixtureRun, record } from "./fixture.ts";

Deno.test("viewer data: every episode, its sampled tokens decoded to text", async () => {
  const dir = await fixtureRun(2);
  const data = await loadViewerData([dir]);
  const run = data.runs[0];
  assert.equal(run.method, "rl");
  assert.equal(run.model, "local/games2");
  assert.equal(run.episodes.length, 8);
  assert.deepEqual(run.episodes.map((e) => e.step), [1, 1, 1, 1, 2, 2, 2, 2]);
  const turn = (run.episodes[0].turns as { tokens: { text: string[]; ids?: number[] } }[])[0];
  assert.equal(turn.tokens.text.join(""), ACTION);
  assert.equal(turn.tokens.ids, undefined, "ids are replaced by their texts");
  assert.equal(data.title, `${run.name}: 2 steps`);
});

Deno.test("viewer data: unknown fields ride along, lines that are not records are counted", async () => {
  const dir = await fixtureRun(1);
  const excluded = record(2, 0, 0, 1, {
    group_kept: false,
    excluded: { reason: "constant reward" },
  });
  const failed = record(2, 0, 1, 0, { error: "context length exceeded" });
  await Deno.writeTextFile(
    join(dir, "rollouts", "iteration_000002.jsonl"),
    [excluded, failed, [1, 2]].map((r) => JSON.stringify(r) + "\n").join(""),
  );
  const notes: string[] = [];
  const eps = await readEpisodes(dir, { after: 1 }, { notes });
  assert.equal(eps.length, 2);
  assert.deepEqual(eps[0].excluded, { reason: "constant reward" });
  assert.equal(eps[1].error, "context length exceeded");
  assert.equal(notes.length, 1);
  assert.match(notes[0], /1 rollout lines are not episode records/);
  // Without a tokenizer, tokens show as ids.
  const turn = (eps[0].turns as { tokens: { text: string[] } }[])[0];
  assert.match(turn.tokens.text[0], /^\[\d+\]$/);
});

Deno.test("viewer data: only steps with a metrics row; live, a run without metrics is empty", async () => {
  const dir = await fixtureRun(1);
  await Deno.writeTextFile(
    join(dir, "rollouts", "iteration_000002.jsonl"),
    JSON.stringify(record(2, 0, 0, 1)) + "\n",
  );
  const data = await loadViewerData([dir]);
  assert.deepEqual(data.runs[0].episodes.map((e) => e.step), [1, 1, 1, 1]);
  const after = await loadViewerData([dir], { afterStep: 1 });
  assert.equal(after.runs[0].episodes.length, 0);
  const empty = await Deno.makeTempDir();
  assert.equal((await loadViewerData([empty], { live: true })).runs[0].steps, 0);
  await assert.rejects(() => loadViewerData([empty]), /metrics file not found/);
});

Deno.test("viewer embed: episodes in memory as an iframe that carries viewer.js, no plotly.js", () => {
  const records = [record(1, 0, 0, 1), record(1, 0, 1, 0)];
  const data = episodesViewerData("nb", records, getTokenizer("local/games2"));
  assert.equal(data.runs[0].episodes.length, 2);
  const html = viewerEmbedHtml(data);
  assert.match(html, /^<iframe class="tinkerbench-viewer"/);
  assert.ok(html.includes("tb-data"), "the data rides in the srcdoc");
  assert.ok(!html.includes("plotly.min.js"));
  assert.ok(html.includes("indexEpisodes"), "viewer.js is inlined");
  assert.throws(
    () => viewerEmbedHtml({ ...data, figures: [{ data: [], layout: {} }] }),
    /episodes only/,
  );
});
