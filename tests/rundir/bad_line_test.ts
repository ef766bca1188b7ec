import { join } from "node:path";
import { assert } from "../assert.ts";
import {
  readEvaluation,
  readJsonl,
  readStepMetrics,
  rolloutsPath,
  runPath,
} from "../../lib/rundir/mod.ts";
import { MetricsCache } from "../../lib/runs/run_files.ts";
import { loadViewerData } from "../../lib/viewer/data.ts";

async function errorOf(f: () => Promise<unknown>): Promise<Error> {
  try {
    await f();
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected an error");
}

async function runWithCorruptMetrics(): Promise<string> {
  const dir = join(await Deno.makeTempDir(), "run-a");
  await Deno.mkdir(dir);
  await Deno.writeTextFile(
    runPath(dir, "metrics"),
    '{"step":1,"env/all/reward/total":0.5}\n{"step":2,"env/all/re\x00\n{"step":3}\n["no step"]\n',
  );
  return dir;
}

Deno.test("readJsonl: a bad line is an error naming the file in its run directory, never its absolute path", async () => {
  const dir = await runWithCorruptMetrics();
  const err = await errorOf(() => readJsonl(runPath(dir, "metrics")));
  assert.equal(err.message, "metrics.jsonl line 2: not valid JSON");
  assert.doesNotMatch(err.message, new RegExp(dir));
  await Deno.mkdir(runPath(dir, "rollouts"));
  await Deno.writeTextFile(rolloutsPath(dir, 3), "{}\nnot json\n{}\n");
  await assert.rejects(
    () => readJsonl(rolloutsPath(dir, 3)),
    /^Error: rollouts\/iteration_000003\.jsonl line 2: not valid JSON$/,
  );
});

Deno.test("readers skip a bad line and report it: the rows around it are kept", async () => {
  const dir = await runWithCorruptMetrics();
  const skipped: string[] = [];
  const rows = await readStepMetrics(dir, skipped);
  assert.deepEqual(rows.map((r) => r.step), [1, 3]);
  assert.deepEqual(skipped, [
    "metrics.jsonl line 2: not valid JSON (skipped)",
    "metrics.jsonl line 4: not a metrics row (no step) (skipped)",
  ]);
  // The run API's cache and the viewer say the same, and go on.
  const cache = new MetricsCache();
  assert.deepEqual((await cache.rows(dir)).map((r) => r.step), [1, 3]);
  assert.deepEqual(await cache.problems(dir), skipped);
  const data = await loadViewerData([dir]);
  assert.equal(data.runs[0].steps, 2);
  assert.ok(data.notes.includes("run-a: metrics.jsonl line 2: not valid JSON (skipped)"));
});

Deno.test("readEvaluation: a broken eval.json is an error naming eval.json, not its path", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(runPath(dir, "evaluation"), '{"env_id":');
  await assert.rejects(() => readEvaluation(dir), /^Error: eval\.json: not valid JSON$/);
  await Deno.writeTextFile(runPath(dir, "evaluation"), '{"env_id":"x"}');
  const err = await errorOf(() => readEvaluation(dir));
  assert.match(err.message, /^eval\.json: /);
  assert.doesNotMatch(err.message, new RegExp(dir));
});
