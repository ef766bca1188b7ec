/**
 * A source of groups written from scratch, as docs/sources.md shows it: it plays a small text
 * environment with partial-credit rewards through `collectGroups` and hands each step's groups
 * to the trainer's loop through `train`'s `source` hook. It trains on the local backend.
 */

import { readJsonl } from "../../lib/rundir/mod.ts";
import { join } from "node:path";
import { assert } from "../assert.ts";
import type { Env } from "../../lib/envs/mod.ts";
import { collectGroups, type EpisodeGroup, type Sampler } from "../../lib/rollout/mod.ts";
import {
  collectOptions,
  type GroupSource,
  type RolloutContext,
  type StepGroups,
} from "../../lib/trainer/mod.ts";
import { train } from "../../lib/train/mod.ts";
import { tinyConfig, withService } from "../trainer/fixtures.ts";

/** Rewards the share of `a`s in the reply: partial credit, so a group's rewards differ. */
class SayA implements Env {
  readonly id = "example:SayA-v0";
  readonly maxTurns = 1;
  reset() {
    return { observation: "Write the letter a many times.", info: {} };
  }
  step(action: string) {
    const share = action.length ? [...action].filter((c) => c === "a").length / action.length : 0;
    return { observation: "", reward: share, terminated: true, truncated: false, info: {} };
  }
  spawn(): Env {
    return new SayA();
  }
}

/** Each step: `groups_per_batch` groups of SayA, sampled with the newest weights. */
class SayASource implements GroupSource {
  constructor(
    readonly ctx: RolloutContext,
    private sampler: Sampler,
    private version: number,
  ) {}

  async take(
    step: number,
    onGroup?: (g: EpisodeGroup) => void,
    signal?: AbortSignal,
  ): Promise<StepGroups | null> {
    const start = performance.now() - this.ctx.t0;
    const specs = Array.from({ length: this.ctx.rollouts.groupsPerBatch }, (_, g) => ({
      makeEnv: () => new SayA(),
      envSeed: step * 1000 + g,
      id: `s${step}-g${g}`,
      seedIndex: g,
    }));
    const res = await collectGroups(specs, this.sampler, {
      ...collectOptions(this.ctx, step, this.version),
      onGroup,
      signal,
    });
    if (signal?.aborted) return null; // Ctrl-C: the step is not trained
    return {
      groups: res.groups,
      metrics: { "say_a/groups": res.groups.length },
      spans: [{ name: "rollout", start, end: performance.now() - this.ctx.t0 }],
    };
  }

  setSampler(sampler: Sampler, version: number): void {
    this.sampler = sampler;
    this.version = version;
  }

  async close(): Promise<void> {}
}

Deno.test("sources: a source written from scratch trains through train's source hook", async () => {
  await withService(async (service) => {
    const logDir = join(await Deno.makeTempDir({ prefix: "tb-fake-source-" }), "run");
    const config = await tinyConfig({ max_steps: 2, batch_size: 2, group_size: 4 });
    const result = await train(config, {
      service,
      logDir,
      source: ({ prepared, sampler, version, t0 }) =>
        new SayASource(
          { rollouts: prepared.rollouts, renderer: prepared.renderer, t0 },
          sampler,
          version,
        ),
    });
    assert.equal(result.steps, 2);
    assert.equal(result.checkpoint?.kind, "final");
    assert.equal(result.evaluationSkipped, "a custom source has no held-out environment");
    const rows = (await readJsonl(join(logDir, "metrics.jsonl"))) as Record<string, number>[];
    assert.deepEqual(rows.map((r) => r["say_a/groups"]), [2, 2]);
    assert.ok(rows.some((r) => r["train/datums"] > 0), "partial credit gives groups a signal");
    const rollouts = await readJsonl(join(logDir, "rollouts", "iteration_000001.jsonl"));
    assert.equal(rollouts.length, 8, "every episode of step 1 is in the rollout store");
  });
});
