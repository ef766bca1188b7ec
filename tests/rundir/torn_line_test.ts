import { join } from "node:path";
import { assert } from "../assert.ts";
import { readCheckpoints, readStepMetrics, repairTornLine, runPath } from "../../lib/rundir/mod.ts";
import { RunLog } from "../../lib/trainer/run_log.ts";

const checkpoint = (step: number) => ({
  name: `periodic_step_${step}`,
  step,
  state_path: `tinker://run/weights/periodic_step_${step}`,
  kind: "periodic",
  time: "2026-01-01T00:00:00.000Z",
});

Deno.test("repairTornLine: cuts a last line a crash left short, and leaves a whole file alone", async () => {
  const path = join(await Deno.makeTempDir(), "checkpoints.jsonl");
  const whole = `${JSON.stringify(checkpoint(2))}\n${JSON.stringify(checkpoint(4))}\n`;
  await Deno.writeTextFile(path, whole + '{"name":"periodic_st');
  assert.equal(await repairTornLine(path), '{"name":"periodic_st'.length);
  assert.equal(await Deno.readTextFile(path), whole);
  assert.equal(await repairTornLine(path), 0);
  assert.equal(await Deno.readTextFile(path), whole);
  // Cut where a newline happened to land: a whole line that is not JSON goes too.
  await Deno.writeTextFile(path, whole + '{"name":\n');
  assert.equal(await repairTornLine(path), '{"name":\n'.length);
  assert.equal(await Deno.readTextFile(path), whole);
  assert.equal(await repairTornLine(join(path, "..", "missing.jsonl")), 0);
});

Deno.test("a resume repairs torn last lines: checkpoints.jsonl and metrics.jsonl stay readable and appendable", async () => {
  const dir = join(await Deno.makeTempDir(), "run");
  await Deno.mkdir(dir);
  await Deno.writeTextFile(
    runPath(dir, "checkpoints"),
    `${JSON.stringify(checkpoint(2))}\n${JSON.stringify(checkpoint(4)).slice(0, 30)}`,
  );
  await Deno.writeTextFile(
    runPath(dir, "metrics"),
    [1, 2, 3].map((step) => JSON.stringify({ step, loss: step }) + "\n").join("") + '{"step":4,"lo',
  );
  const log = await RunLog.open(dir);
  assert.equal(log.lastCheckpoint()?.step, 2, "resumes from the last whole record");
  await log.rewindTo(2);
  await log.appendMetrics({ step: 3, loss: 0.5 });
  await log.appendCheckpoint({ ...checkpoint(4), kind: "periodic" } as never);
  // Strict reads: every line whole, the rewound step gone, the new row on its own line.
  assert.deepEqual((await readStepMetrics(dir)).map((r) => [r.step, r.loss]), [[1, 1], [2, 2], [
    3,
    0.5,
  ]]);
  assert.deepEqual((await readCheckpoints(dir)).map((c) => c.step), [2, 4]);
  const events = await Deno.readTextFile(runPath(dir, "events"));
  assert.match(events, /checkpoints\.jsonl: removed a last line cut short/);
  assert.match(events, /metrics\.jsonl: removed a last line cut short/);
});

Deno.test("status.json follows the run: it says the step each metrics row reaches", async () => {
  const dir = join(await Deno.makeTempDir(), "run");
  const log = await RunLog.open(dir);
  await log.writeStatus({ state: "running", step: 0 });
  await log.appendMetrics({ step: 1 });
  await log.appendMetrics({ step: 2 });
  const status = JSON.parse(await Deno.readTextFile(runPath(dir, "status")));
  assert.equal(status.state, "running");
  assert.equal(status.step, 2);
});
