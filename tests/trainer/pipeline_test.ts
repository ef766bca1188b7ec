import { join } from "node:path";
import { assert } from "../assert.ts";
import { ConfigError } from "../../lib/config/mod.ts";
import { train } from "../../lib/train/mod.ts";
import { readJsonl } from "../../lib/rundir/mod.ts";
import { parseRolloutRecord } from "../../lib/rl/records.ts";
import { offPolicySteps } from "../../lib/rl/staleness.ts";
import { tinyConfig, withService } from "./fixtures.ts";

for (
  const [mode, over] of [
    ["stream", { execution: "stream", num_minibatches: 2 }],
    ["async", { execution: "async", max_steps_off_policy: 1, num_env: 16 }],
  ] as const
) {
  Deno.test(`pipeline ${mode}: trains the learnable task (reward rises, seeded)`, async () => {
    await withService(async (service) => {
      const dir = await Deno.makeTempDir({ prefix: `tb-pipe-${mode}-` });
      const run = await train(
        await tinyConfig({ max_steps: 12, max_tokens: 2, group_size: 8, ...over }),
        {
          service,
          logDir: dir,
        },
      );
      const reward = run.history.map((m) => m["env/all/reward/total"]);
      const first = (reward[0] + reward[1] + reward[2]) / 3;
      const last = (reward[9] + reward[10] + reward[11]) / 3;
      console.log(`${mode} reward per step: ${reward.map((r) => r.toFixed(2)).join(" ")}`);
      assert.ok(last > first + 0.2, `reward ${first.toFixed(2)} → ${last.toFixed(2)}`);
      assert.ok(run.history.slice(0, 6).every((m) => m["train/datums"] > 0), "early steps train");
      const spans = await readJsonl(join(dir, "timing_spans.jsonl"));
      assert.ok(spans.some((s) => (s as { name: string }).name === "train"));
    });
  });
}

Deno.test("pipeline async: never trains on a group more than max_steps_off_policy versions old; pacing drops nothing", async () => {
  await withService(async (service) => {
    for (const maxOff of [0, 1]) {
      const dir = await Deno.makeTempDir({ prefix: "tb-pipe-stale-" });
      const run = await train(
        await tinyConfig({
          max_steps: 6,
          batch_size: 2,
          group_size: 4,
          execution: "async",
          max_steps_off_policy: maxOff,
          num_env: 16,
        }),
        {
          service,
          logDir: dir,
        },
      );
      for (const m of run.history) {
        assert.ok(
          m["async/off_policy_max"] <= maxOff,
          `step ${m.step}: ${m["async/off_policy_max"]}`,
        );
        assert.equal(m["async/requeued"], 0, "pacing: no group went stale");
        assert.equal(m["env/all/total_episodes"], 8, "every group of the step was trained");
      }
      // The rollout store agrees turn by turn.
      for (let step = 1; step <= 6; step++) {
        const file = join(dir, "rollouts", `iteration_${String(step).padStart(6, "0")}.jsonl`);
        for (const r of (await readJsonl(file)).map(parseRolloutRecord)) {
          for (const t of r.turns) assert.ok(offPolicySteps(t.sampler_version, step) <= maxOff);
        }
      }
      if (maxOff === 1) {
        assert.ok(
          run.history.some((m) => m["async/off_policy_max"] === 1),
          "with one step allowed, some groups were sampled ahead",
        );
      }
    }
  });
});

Deno.test("pipeline stream: batch-normalised advantages are refused with several minibatches", async () => {
  await withService(async (service) => {
    await assert.rejects(
      train(
        await tinyConfig({
          max_steps: 1,
          execution: "stream",
          num_minibatches: 2,
          "advantages.mode": "batch_zscore",
        }),
        {
          service,
          logDir: await Deno.makeTempDir(),
        },
      ),
      (e: Error) =>
        e instanceof ConfigError &&
        /pipeline.mode stream: advantages.mode batch_zscore/.test(e.message),
    );
  });
});
