import { join } from "node:path";
import { assert } from "../assert.ts";
import { train } from "../../lib/train/mod.ts";
import { readJsonl } from "../../lib/rundir/mod.ts";
import { tinyConfig, withService } from "./fixtures.ts";
import { heldOutLine, readEvaluation } from "../../lib/rundir/mod.ts";
import { writeRunReport } from "../../lib/viewer/report.ts";

const actions = async (dir: string, step: number) =>
  (await readJsonl(join(dir, "rollouts", `iteration_${String(step).padStart(6, "0")}.jsonl`)))
    .map((e) => (e as { turns: { action: string }[] }).turns.map((t) => t.action));

Deno.test("trainer: a resumed run continues exactly where an uninterrupted one goes", async () => {
  await withService(async (service) => {
    const straight = await Deno.makeTempDir({ prefix: "tb-run-a-" });
    const resumed = await Deno.makeTempDir({ prefix: "tb-run-b-" });
    const a = await train(await tinyConfig({ max_steps: 4, save_interval: 2 }), {
      service,
      logDir: straight,
    });
    assert.equal(a.steps, 4);
    assert.equal(a.checkpoint?.kind, "final");
    const ckpts = (await readJsonl(join(straight, "checkpoints.jsonl"))) as { step: number }[];
    assert.deepEqual(ckpts.map((c) => c.step), [2, 4]);
    assert.ok(a.history.every((m) => m["train/datums"] > 0), "every step trained");
    assert.ok(Number.isFinite(a.history[0]["optim/kl_sample_train_v1"]));

    await train(await tinyConfig({ max_steps: 2 }), { service, logDir: resumed });
    const b = await train(await tinyConfig({ max_steps: 4 }), {
      service,
      logDir: resumed,
    });
    assert.equal(b.resumedFrom?.step, 2);
    assert.deepEqual(b.history.map((m) => m.step), [3, 4]);
    const rows = (await readJsonl(join(resumed, "metrics.jsonl"))) as { step: number }[];
    assert.deepEqual(rows.map((r) => r.step), [1, 2, 3, 4]);
    // Same weights, Adam state and seeds: the same episodes (step 4's depend on step 3's update,
    // which a fresh optimizer would have made differently).
    for (const step of [3, 4]) {
      assert.deepEqual(await actions(resumed, step), await actions(straight, step));
    }
    assert.equal(b.history[1]["env/all/reward/total"], a.history[3]["env/all/reward/total"]);
  });
});

Deno.test("trainer: an abort saves an interrupted checkpoint; a crash's extra rows are rewound", async () => {
  await withService(async (service) => {
    const dir = await Deno.makeTempDir({ prefix: "tb-run-c-" });
    const abort = new AbortController();
    const first = await train(await tinyConfig({ max_steps: 5 }), {
      service,
      logDir: dir,
      signal: abort.signal,
      onStep: () => abort.abort(),
    });
    assert.equal(first.interrupted, true);
    assert.equal(first.checkpoint?.kind, "interrupted");
    assert.equal(first.checkpoint?.step, 1);
    // What a crash after step 1's checkpoint leaves: a row and a rollout file of step 2, and
    // a line cut short.
    await Deno.writeTextFile(join(dir, "metrics.jsonl"), '{"step":2,"stale":1}\n{"step":3', {
      append: true,
    });
    await Deno.writeTextFile(join(dir, "rollouts", "iteration_000002.jsonl"), "{}\n");
    const second = await train(await tinyConfig({ max_steps: 2 }), {
      service,
      logDir: dir,
    });
    assert.equal(second.resumedFrom?.step, 1);
    const rows = (await readJsonl(join(dir, "metrics.jsonl"))) as Record<string, number>[];
    assert.deepEqual(rows.map((r) => r.step), [1, 2]);
    assert.equal(rows[1].stale, undefined);
    assert.ok(rows[1]["time/step"] > 0);
  });
});

Deno.test("trainer: a finished run is not trained again (nor evaluated)", async () => {
  await withService(async (service) => {
    const dir = await Deno.makeTempDir({ prefix: "tb-run-d-" });
    const first = await train(await tinyConfig({ max_steps: 1, "eval.episodes": 4 }), {
      service,
      logDir: dir,
    });
    assert.equal(first.evaluation?.episodes, 4);
    const again = await train(await tinyConfig({ max_steps: 1, "eval.episodes": 4 }), {
      service,
      logDir: dir,
    });
    assert.equal(again.history.length, 0);
    assert.equal(again.steps, 1);
    assert.equal(again.evaluation, undefined);
  });
});

Deno.test("trainer: reward rises (seeded) when the policy can learn the task", async () => {
  await withService(async (service) => {
    const dir = await Deno.makeTempDir({ prefix: "tb-run-e-" });
    const run = await train(
      await tinyConfig({ max_steps: 12, batch_size: 4, group_size: 8, max_tokens: 2 }),
      {
        service,
        logDir: dir,
      },
    );
    const reward = run.history.map((m) => m["env/all/reward/total"]);
    const first = (reward[0] + reward[1] + reward[2]) / 3;
    const last = (reward[9] + reward[10] + reward[11]) / 3;
    console.log(`reward per step: ${reward.map((r) => r.toFixed(2)).join(" ")}`);
    assert.ok(last > first + 0.25, `reward ${first.toFixed(2)} → ${last.toFixed(2)}`);

    // The held-out evaluation sees the same rise: base and trained play the same episodes.
    const e = run.evaluation!;
    console.log(heldOutLine(e));
    assert.equal(e.episodes, 64);
    assert.equal(e.base.episodes + e.trained.episodes, 128);
    assert.equal(e.step, 12);
    assert.ok(e.trained.success > e.base.success + 0.2, heldOutLine(e));
    assert.match(
      heldOutLine(e),
      /^held-out success: base 0\.\d\d → trained [01]\.\d\d \(64 episodes\)$/,
    );
    assert.deepEqual(await readEvaluation(dir), e);
    const page = await Deno.readTextFile(await writeRunReport(dir));
    assert.ok(page.includes(`<p class="note">${heldOutLine(e)}</p>`));
    assert.match(page, /Held-out success: 64 episodes of debug:EvenFirstByte-v0/);
  });
});
