/**
 * The one RL step loop, whatever feeds it: a proxy run sends every optimizer setting and writes
 * the step span as an environment run does; a run that cannot train stops loudly with its
 * evidence in the run directory; a rerun with other settings is refused.
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { loadTrainConfig, ProxySchema, type TrainConfig } from "../../lib/config/mod.ts";
import { ConfigError } from "../../lib/config/errors.ts";
import type { Episode } from "../../lib/rl/types.ts";
import { type Env, register } from "../../lib/envs/mod.ts";
import { startLocalServer } from "../../lib/local/server/mod.ts";
import { runAgent } from "../../lib/proxy/agent.ts";
import { ServiceClient } from "../../lib/tinker/mod.ts";
import { RunFailedError, StepFailures } from "../../lib/trainer/failures.ts";
import { TrainConfigSchema } from "../../lib/config/mod.ts";
import { failureSettings, fitToContext } from "../../lib/trainer/mod.ts";
import { train, type TrainHooks } from "../../lib/train/mod.ts";
import { readJsonl } from "../../lib/rundir/mod.ts";
import { tinyConfig, withService } from "./fixtures.ts";

/** An environment whose every reset fails, as an unreachable task server would. */
class Unreachable implements Env {
  readonly id = "test:Unreachable-v0";
  readonly maxTurns = 1;
  reset(): never {
    throw new Error("connection refused (task server at 127.0.0.1:9)");
  }
  step(): never {
    throw new Error("never stepped");
  }
  spawn(): Env {
    return new Unreachable();
  }
}
register("test:Unreachable-v0", () => new Unreachable());

/** An environment that rewards every answer alike: no group ever has a signal. */
class Flat implements Env {
  readonly id = "test:Flat-v0";
  readonly maxTurns = 1;
  reset() {
    return { observation: "Say anything.", info: {} };
  }
  step() {
    return { observation: "ok", reward: 0.5, terminated: true, truncated: false, info: {} };
  }
  spawn(): Env {
    return new Flat();
  }
}
register("test:Flat-v0", () => new Flat());

/**
 * A proxy run with the reference agent playing `envId` through it (rewards sent). GuessTheNumber
 * rewards only a solved episode's last turn, so most of its turns train nothing (and, since a
 * batch of such turns is a step of none, may train nothing in a short run); `test:Flat-v0`
 * rewards every turn 0.5, so every step trains.
 */
async function trainWithAgent(
  config: TrainConfig,
  o: TrainHooks,
  envId = "game:GuessTheNumber-v0-easy",
) {
  const stop = new AbortController();
  let agent: Promise<unknown> = Promise.resolve();
  try {
    return await train(config, {
      ...o,
      onListen: (url) => {
        agent = runAgent({
          envId,
          baseUrl: url,
          episodes: 60,
          concurrency: 4,
          maxTokens: 48,
          sendRewards: true,
          signal: stop.signal,
        });
      },
    });
  } finally {
    stop.abort();
    await agent.catch(() => {});
  }
}

Deno.test({
  name: "loop: a proxy run sends weight_decay with every optim_step and writes each step's span",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "tb-loop-proxy-" });
    const server = await startLocalServer({ dataDir });
    const optimSteps: { adam_params: Record<string, number> }[] = [];
    // The client's requests as they go out, read on their way to the real server.
    const recording: typeof fetch = (input, init) => {
      if (String(input).endsWith("/optim_step") && typeof init?.body === "string") {
        optimSteps.push(JSON.parse(init.body));
      }
      return fetch(input, init);
    };
    const service = await ServiceClient.connect({
      baseUrl: server.url,
      apiKey: "tml-local",
      fetch: recording,
    });
    const logDir = join(dataDir, "run");
    try {
      const config = await loadTrainConfig({
        flags: { method: "rl", max_steps: 2, batch_size: 1, weight_decay: 0.05 },
      });
      config.proxy = ProxySchema.parse({ host: "127.0.0.1", port: 0 });
      const result = await trainWithAgent(config, { service, logDir }, "test:Flat-v0");
      assert.equal(result.steps, 2);
      assert.ok(optimSteps.length >= 2);
      assert.ok(optimSteps.every((b) => b.adam_params.weight_decay === 0.05), "weight_decay sent");
      const spans = (await readJsonl(join(logDir, "timing_spans.jsonl"))) as {
        step: number;
        name: string;
      }[];
      assert.deepEqual(spans.filter((s) => s.name === "step").map((s) => s.step), [1, 2]);
      const rows = (await readJsonl(join(logDir, "metrics.jsonl"))) as Record<string, number>[];
      assert.ok(rows.every((r) => r["optim/weight_decay"] === 0.05));
      assert.match(result.evaluationSkipped ?? "", /proxy run has no environment/);
    } finally {
      service.close();
      await server.close();
    }
  },
});

Deno.test({
  name:
    "loop: a proxy run with eval.env_id plays that environment's held-out episodes, base and trained",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "tb-loop-proxy-eval-" });
    const server = await startLocalServer({ dataDir });
    const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
    const logDir = join(dataDir, "run");
    try {
      const config = await loadTrainConfig({
        flags: {
          method: "rl",
          max_steps: 1,
          batch_size: 1,
          "eval.episodes": 6,
          "eval.env_id": "game:GuessTheNumber-v0-easy",
        },
        overrides: ["proxy.port=0"],
      });
      const result = await trainWithAgent(config, { service, logDir });
      assert.equal(result.evaluationSkipped, undefined);
      const e = JSON.parse(await Deno.readTextFile(join(logDir, "eval.json")));
      assert.equal(e.env_id, "game:GuessTheNumber-v0-easy");
      assert.equal(e.step, 1);
      assert.equal(e.base.episodes, 6);
      assert.equal(e.trained.episodes, 6);
    } finally {
      service.close();
      await server.close();
    }
  },
});

Deno.test("loop: eval.env_id is refused outside a proxy run, in one line naming the key", async () => {
  await withService(async (service) => {
    const logDir = await Deno.makeTempDir({ prefix: "tb-loop-eval-env-" });
    const config = await tinyConfig({ max_steps: 1, "eval.env_id": "debug:EvenFirstByte-v0" });
    const err = await train(config, { service, logDir }).then(() => null, (e) => e as Error);
    assert.ok(err, "refused");
    assert.match(err.message, /^eval\.env_id: for proxy runs \(--source proxy\) only/);
  });
});

Deno.test("loop: a step whose every rollout failed stops the run with the first error; the run directory says so", async () => {
  await withService(async (service) => {
    const logDir = await Deno.makeTempDir({ prefix: "tb-loop-fail-" });
    const config = await tinyConfig({ env_id: "test:Unreachable-v0", max_steps: 5 });
    const err = await train(config, { service, logDir }).then(() => null, (e) => e);
    assert.ok(err instanceof RunFailedError, String(err));
    assert.match(
      err.message,
      /^step 1: every rollout failed \(4\); first error: reset failed: connection refused/,
    );
    assert.ok(!err.message.includes("\n"), "one line");
    const status = JSON.parse(await Deno.readTextFile(join(logDir, "status.json")));
    assert.equal(status.state, "failed");
    assert.match(status.error, /every rollout failed/);
    const stored = (await readJsonl(join(logDir, "rollouts", "iteration_000001.jsonl"))) as {
      error?: string;
      excluded_reason?: string;
    }[];
    assert.equal(stored.length, 4, "each failed group's error is kept");
    assert.ok(stored.every((r) => /connection refused/.test(r.error ?? "")));
  });
});

Deno.test("loop: steps in a row with nothing to train stop the run, each with its reason", async () => {
  await withService(async (service) => {
    const logDir = await Deno.makeTempDir({ prefix: "tb-loop-idle-" });
    const config = await tinyConfig({
      env_id: "test:Flat-v0",
      max_steps: 10,
      "pipeline.max_steps_without_datums": 2,
    });
    const notices: string[] = [];
    const err = await train(config, { service, logDir, onNotice: (l) => notices.push(l) })
      .then(() => null, (e) => e);
    assert.ok(err instanceof RunFailedError, String(err));
    assert.match(err.message, /^steps 1-2 trained nothing: every group had one reward/);
    // The fix a newcomer needs: a larger group, or rewards with partial credit.
    assert.match(err.message, /try a larger --group-size \(now 4\), or partial-credit rewards/);
    assert.match(err.message, /pipeline\.max_steps_without_datums/);
    assert.equal(notices.length, 2);
    const events = (await readJsonl(join(logDir, "events.jsonl"))) as { event: string }[];
    assert.deepEqual(events.map((e) => e.event), ["nothing_trained", "nothing_trained"]);
  });
});

Deno.test("loop: opd on an environment with no next observation says there is no hint", async () => {
  await withService(async (service) => {
    const logDir = await Deno.makeTempDir({ prefix: "tb-loop-opd-" });
    const config = await tinyConfig({
      method: "opd",
      env_id: "test:Flat-v0",
      max_steps: 10,
      "pipeline.max_steps_without_datums": 2,
    });
    const err = await train(config, { service, logDir, onNotice: () => {} })
      .then(() => null, (e) => e);
    assert.ok(err instanceof RunFailedError, String(err));
    assert.match(err.message, /^steps 1-2 trained nothing: no hint/);
    assert.match(err.message, /use --method rl/);
    assert.doesNotMatch(err.message, /nonzero advantage/);
  });
});

Deno.test("loop: a rerun with other settings is refused, naming them; a longer max_steps resumes", async () => {
  await withService(async (service) => {
    const logDir = await Deno.makeTempDir({ prefix: "tb-loop-resume-" });
    await train(await tinyConfig({ max_steps: 1 }), { service, logDir });
    const changed = await train(
      await tinyConfig({ max_steps: 1, learning_rate: 2e-3, group_size: 2 }),
      {
        service,
        logDir,
      },
    ).then(() => null, (e) => e);
    assert.ok(changed instanceof ConfigError, String(changed));
    assert.match(
      changed.message,
      /other settings \(optimizer\.learning_rate, rollout\.group_size\)/,
    );
    assert.match(changed.message, /--restart/);
    const longer = await train(await tinyConfig({ max_steps: 2 }), { service, logDir });
    assert.equal(longer.resumedFrom?.step, 1);
    assert.equal(longer.steps, 2);
    assert.equal(longer.evaluation?.step, 2, "eval.json follows the resumed run");
  });
});

Deno.test("loop: a run recorded under a setting's old name (and before a setting existed) resumes", async () => {
  await withService(async (service) => {
    const logDir = await Deno.makeTempDir({ prefix: "tb-loop-oldnames-" });
    await train(await tinyConfig({ max_steps: 1 }), { service, logDir });
    // config.json as an earlier version wrote it: scoring.reward_source, no worse-teacher rule.
    const path = join(logDir, "config.json");
    const recorded = JSON.parse(await Deno.readTextFile(path));
    const { rl_reward, worse_teacher_frac: _f, worse_teacher_steps: _s, ...scoring } =
      recorded.scoring;
    recorded.scoring = { ...scoring, reward_source: rl_reward };
    await Deno.writeTextFile(path, JSON.stringify(recorded));
    const longer = await train(await tinyConfig({ max_steps: 2 }), { service, logDir });
    assert.equal(longer.resumedFrom?.step, 1);
    assert.equal(longer.steps, 2);
  });
});

Deno.test("loop: max_tokens past the model's context is refused before the run starts", async () => {
  await withService(async (service) => {
    const logDir = join(await Deno.makeTempDir({ prefix: "tb-loop-ctx-" }), "run");
    const err = await train(await tinyConfig({ max_tokens: 5000 }), { service, logDir })
      .then(() => null, (e) => e);
    assert.ok(err instanceof ConfigError, String(err));
    assert.match(err.message, /^rollout\.max_tokens_per_turn: 5000 tokens per turn leave no room/);
    const created = await Deno.stat(logDir).then(() => true, () => false);
    assert.ok(!created, "no run directory is left behind");
  });
});

Deno.test("loop: an episode's conversation is bounded by the model's context unless the config bounds it tighter", async () => {
  await withService(async (service) => {
    const context = await service.contextLength("local/tiny");
    const open = await fitToContext(await tinyConfig({}), service);
    assert.equal(open.rollout.max_total_tokens, context, "unset: the model's context");
    const tight = await fitToContext(await tinyConfig({ max_total_tokens: 100 }), service);
    assert.equal(tight.rollout.max_total_tokens, 100);
    const loose = await fitToContext(await tinyConfig({ max_total_tokens: 10 * context }), service);
    assert.equal(loose.rollout.max_total_tokens, context, "never past the context");
    // What the run used is what config.json says.
    const logDir = join(await Deno.makeTempDir({ prefix: "tb-loop-total-" }), "run");
    await train(await tinyConfig({ max_steps: 1, "eval.episodes": 0 }), {
      service,
      logDir,
    });
    const written = JSON.parse(await Deno.readTextFile(join(logDir, "config.json")));
    assert.equal(written.rollout.max_total_tokens, context);
  });
});

/** Answers Slow's environments were asked to judge (each takes 2 s). */
let slowJudged = 0;

/** A task whose every answer takes its environment a while to judge. */
class Slow implements Env {
  readonly id = "test:Slow-v0";
  readonly maxTurns = 1;
  reset() {
    return { observation: "Say anything.", info: {} };
  }
  async step() {
    slowJudged++;
    await new Promise((r) => setTimeout(r, 2000));
    return { observation: "ok", reward: 1, terminated: true, truncated: false, info: {} };
  }
  spawn(): Env {
    return new Slow();
  }
}
register("test:Slow-v0", () => new Slow());

Deno.test("loop: an abort mid-step stops its rollouts at once; the step is not trained, and nothing trained needs no checkpoint", async () => {
  await withService(async (service) => {
    const logDir = await Deno.makeTempDir({ prefix: "tb-loop-abort-" });
    const abort = new AbortController();
    const config = await tinyConfig({
      env_id: "test:Slow-v0",
      max_steps: 3,
      "rollout.max_concurrency": 2,
    });
    slowJudged = 0;
    setTimeout(() => abort.abort(), 500);
    const result = await train(config, { service, logDir, signal: abort.signal });
    // The step has 16 episodes, two at a time: the abort ends it after those in flight (counted,
    // not timed, so a busy machine cannot fail it).
    assert.ok(slowJudged <= 2, `${slowJudged} answers judged after an abort with 2 in flight`);
    assert.deepEqual([result.interrupted, result.steps], [true, 0]);
    // No step trained: the state is the seeded start, which a rerun makes again exactly.
    assert.equal(result.checkpoint, null);
    assert.deepEqual(await readJsonl(join(logDir, "checkpoints.jsonl")), []);
    const events = (await readJsonl(join(logDir, "events.jsonl"))) as { event: string }[];
    assert.deepEqual(events.map((e) => e.event), ["nothing_to_save"]);
    assert.deepEqual(await readJsonl(join(logDir, "metrics.jsonl")), []);
  });
});

Deno.test("loop: a mix step whose groups all failed stops the run like one whose rollouts all did", () => {
  const failures = new StepFailures(failureSettings(TrainConfigSchema.parse({
    pipeline: { max_steps_without_datums: 5 },
    rollout: { group_size: 4 },
  })));
  const group = { id: "s000001-g000", envId: "coin", envSeed: 3, tags: ["coin"], episodes: [] };
  const taken = {
    groups: [],
    excluded: [{ group, reason: "failing: 4 of 4 episodes failed (max_failing_rollouts 1)" }],
    failed: [{
      groupId: group.id,
      envId: "coin",
      envSeed: 3,
      tags: ["coin"],
      episode: 0,
      error: "reset failed: connection refused",
    }],
    metrics: {},
    spans: [],
  };
  assert.throws(
    () => failures.check(1, taken, "every rollout failed"),
    (e) => e instanceof RunFailedError && /^step 1: every rollout failed \(1\)/.test(e.message),
  );
  // A constant group was played: that step only trained nothing.
  const constant = { ...taken, excluded: [{ group, reason: "constant reward" }] };
  failures.check(2, constant, "1 group excluded: constant reward");
});

Deno.test("loop: a mix step whose groups all solved their tasks (excluded as constant) is success, not an idle step", () => {
  const failures = new StepFailures(failureSettings(TrainConfigSchema.parse({
    pipeline: { max_steps_without_datums: 2 },
    rollout: { group_size: 2 },
  })));
  const groupOf = (reward: number) => ({
    id: "s000001-g000",
    envId: "coin",
    envSeed: 3,
    tags: ["coin"],
    episodes: [0, 1].map(() => ({ totalReward: reward }) as Episode),
  });
  const stepOf = (reward: number) => ({
    groups: [],
    excluded: [{ group: groupOf(reward), reason: "constant reward" }],
    metrics: {},
    spans: [],
  });
  // configs/openreward-single.yaml with local/tools run 21 stopped at step 66 this way.
  for (let step = 1; step <= 3; step++) failures.check(step, stepOf(1), "1 group excluded");
  failures.check(4, stepOf(0), "1 group excluded: constant reward");
  assert.throws(
    () => failures.check(5, stepOf(0), "1 group excluded: constant reward"),
    (e) => e instanceof RunFailedError && /^steps 4-5 trained nothing/.test(e.message),
  );
});
