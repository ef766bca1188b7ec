/**
 * `train` stopped before a step trained: there is nothing to save (no checkpoint is written,
 * the event says why), and the rerun starts from the same seeded state, so it plays and trains
 * exactly what a run never stopped does.
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { train } from "../../lib/train/mod.ts";
import { readJsonl } from "../../lib/rundir/mod.ts";
import { tinyConfig, withService } from "../trainer/fixtures.ts";

const actions = async (dir: string, step: number) =>
  (await readJsonl(join(dir, "rollouts", `iteration_${String(step).padStart(6, "0")}.jsonl`)))
    .map((e) => (e as { turns: { action: string }[] }).turns.map((t) => t.action));

Deno.test("train: a run stopped before a step trained writes no checkpoint, and its rerun is exact", async () => {
  await withService(async (service) => {
    const straight = await Deno.makeTempDir({ prefix: "tb-train-straight-" });
    const stopped = await Deno.makeTempDir({ prefix: "tb-train-stopped-" });
    const a = await train(await tinyConfig({ max_steps: 2 }), { service, logDir: straight });

    const abort = new AbortController();
    abort.abort();
    const first = await train(await tinyConfig({ max_steps: 2 }), {
      service,
      logDir: stopped,
      signal: abort.signal,
    });
    assert.deepEqual([first.interrupted, first.steps, first.checkpoint], [true, 0, null]);
    assert.deepEqual(await readJsonl(join(stopped, "checkpoints.jsonl")), []);
    const events = (await readJsonl(join(stopped, "events.jsonl"))) as { event: string }[];
    assert.deepEqual(events.map((e) => e.event), ["nothing_to_save"]);

    const b = await train(await tinyConfig({ max_steps: 2 }), { service, logDir: stopped });
    assert.equal(b.resumedFrom, null);
    assert.deepEqual(b.history.map((m) => m.step), [1, 2]);
    for (const step of [1, 2]) {
      assert.deepEqual(await actions(stopped, step), await actions(straight, step));
    }
    assert.equal(b.history[1]["env/all/reward/total"], a.history[1]["env/all/reward/total"]);
  });
});
