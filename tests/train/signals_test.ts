/**
 * Ctrl-C (SIGINT) and SIGTERM stop `deno task train` with its steps saved in every state an
 * environment run can be in: waiting on the environment's turn, mid-rollout (the policy
 * sampling), mid-step, async with the next step's rollouts in flight, and during the held-out
 * evaluation. Each runs the real script as a process on the local backend;
 * `test:Slow-v0` (./slow_env.ts) marks what the run is doing so the signal lands in the state
 * named. The proxy mode's states are in ./signals_proxy_test.ts; the timing rules in
 * ./signal_run.ts.
 */

import { join } from "node:path";
import { readJsonl } from "../../lib/rundir/mod.ts";
import { assert } from "../assert.ts";
import { count, marks, rows, SLOW_ENV, start, stop, until } from "./signal_run.ts";

/** An environment run on `test:Slow-v0`: one group a step, 8 tokens an answer. */
function envRun(o: { maxTokens?: number; groupSize?: number; batchSize?: number } = {}) {
  return [
    "--model-name",
    "local/tiny",
    "--env-id",
    "test:Slow-v0",
    ...SLOW_ENV,
    "--max-tokens",
    String(o.maxTokens ?? 8),
    "--group-size",
    String(o.groupSize ?? 2),
    "--batch-size",
    String(o.batchSize ?? 1),
  ];
}

Deno.test("signals, env mode: Ctrl-C waiting on the environment's turn saves and exits", async () => {
  // The environment takes 60 s to answer: the signal lands while the run waits on it, with
  // nothing sampling.
  const t = await start([...envRun(), "--max-steps", "50", "eval.episodes=0"], {
    TB_SLOW_STEP_MS: "60000",
  });
  await until(t, "the environment's turn", async () => (await count(t, "stepping")) >= 2);
  const { out, steps } = await stop(t, "SIGINT", "interrupted", {
    mode: "env",
    state: "waiting on the environment",
  });
  assert.match(
    out.stdout,
    new RegExp(`interrupted after step ${steps}; rerun to resume`),
  );
  const status = JSON.parse(await Deno.readTextFile(join(t.dir, "status.json")));
  assert.equal(status.state, "interrupted");
});

Deno.test("signals, env mode: Ctrl-C mid-rollout (the policy sampling) saves and exits", async () => {
  // A step trained first (the sampler is warm); then the signal lands as the next step's
  // episodes ask the policy for their answers (64 tokens each).
  const t = await start(
    [...envRun({ maxTokens: 64, groupSize: 4 }), "--max-steps", "50", "eval.episodes=0"],
    { TB_SLOW_MS: "50" },
  );
  await until(t, "a trained step", async () => (await rows(t)) >= 1);
  const before = await count(t, "sampling");
  await until(t, "the next episodes' sampling", async () => (await count(t, "sampling")) > before);
  await stop(t, "SIGINT", "interrupted", { mode: "env", state: "mid-rollout" });
});

Deno.test("signals, env mode: SIGTERM mid-step (the step's episodes played) saves the step and exits", async () => {
  const t = await start([...envRun(), "--max-steps", "50", "eval.episodes=0"]);
  // Both episodes of step 2 have ended: its update is training now. (Step 1's first
  // forward_backward also compiles the model on the local backend, seconds on a busy machine.)
  await until(t, "step 2's episodes", async () => (await count(t, "played")) >= 4);
  const { steps } = await stop(t, "SIGTERM", "interrupted", {
    mode: "env",
    state: "mid-step",
  });
  assert.ok(steps >= 2, "the step in training is finished and saved");
});

Deno.test("signals, env mode: Ctrl-C in async mode as a step is recorded, the next rollouts in flight, saves and exits", async () => {
  // Async: the next step's episodes play while a step trains. The signal lands right after a
  // step is recorded, with the next step's rollouts in flight: in the next step or just before
  // it (both measured; the sync test above is the one sure to land mid-step).
  const t = await start([
    ...envRun({ batchSize: 2 }),
    "--max-steps",
    "50",
    "eval.episodes=0",
    "pipeline.mode=async",
  ], { TB_SLOW_MS: "0" });
  await until(t, "two trained steps", async () => (await rows(t)) >= 2);
  const recorded = await rows(t);
  await until(t, "the next step", async () => (await rows(t)) > recorded);
  await stop(t, "SIGINT", "interrupted", { mode: "env", state: "async, rollouts in flight" });
});

Deno.test("signals, env mode: Ctrl-C during the held-out evaluation exits, the run saved", async () => {
  const t = await start([...envRun(), "--max-steps", "1", "eval.episodes=64"]);
  await until(t, "the evaluation", async () => (await marks(t)).includes("eval"));
  const { out } = await stop(t, "SIGINT", "final", { mode: "env", state: "evaluation" });
  assert.match(out.stdout, /no held-out evaluation: interrupted/);
  await Deno.stat(join(t.dir, "eval.json")).then(
    () => assert.fail("a partial evaluation is not written"),
    () => {},
  );
  const events = (await readJsonl(join(t.dir, "events.jsonl"))) as { event: string }[];
  assert.ok(events.some((e) => e.event === "evaluation_skipped"), JSON.stringify(events));
});
