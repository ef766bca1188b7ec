import { assert } from "../assert.ts";
import { heldOutEnvironment } from "../../lib/trainer/evaluate.ts";
import { type HeldOutEvaluation, heldOutLine } from "../../lib/rundir/mod.ts";
import { make } from "../../lib/envs/registry.ts";
import { ToolTaskEnv } from "../../lib/envs/tool_task_env.ts";
import type { TaskProvider } from "../../lib/envs/tool_task_env.ts";

const score = (success: number, episodes: number) => ({ success, mean_reward: success, episodes });
const mix = (
  environments: HeldOutEvaluation["environments"],
  played: number,
): HeldOutEvaluation => ({
  env_id: "mix:a+b",
  model: "local/tools",
  episodes: 64,
  env_seeds: [1_000_000, 1_000_063],
  sampler_seed: 5_000_000,
  temperature: 1,
  step: 20,
  base: score(played ? 0.25 : 0, played),
  trained: score(played ? 0.5 : 0, played),
  environments,
  seconds: 1,
});

Deno.test("heldOutLine: a mix names each environment's split other than train, and the skipped ones with why", () => {
  const line = heldOutLine(mix({
    a: { base: score(0.25, 64), trained: score(0.5, 64), split: "test" },
    b: { skipped: "trains on every split it has (test): no held-out tasks" },
  }, 64));
  assert.equal(
    line,
    "held-out success: base 0.25 → trained 0.50 (64 episodes per environment); " +
      "a (test split): base 0.25 → trained 0.50; " +
      "b: skipped (trains on every split it has (test): no held-out tasks)",
  );
});

Deno.test("heldOutLine: with every environment skipped there is no overall number, only the reasons", () => {
  const line = heldOutLine(mix({ b: { skipped: "trains on every split it has (train)" } }, 0));
  assert.equal(line, "held-out success: none; b: skipped (trains on every split it has (train))");
});

Deno.test("heldOutEnvironment: a task list plays a split it does not train on; seeded environments their held-out seeds", async () => {
  const words = await heldOutEnvironment(() => make("tool:WordProblems-v0"));
  assert.deepEqual(words.split, { name: "test", trained_on: false });
  const env = words.makeEnv() as ToolTaskEnv;
  assert.equal(env.split, "test");
  assert.equal(env.id, "tool:WordProblems-v0");
  const { info } = await env.reset(1_000_000);
  assert.equal(info.split, "test");

  const game = await heldOutEnvironment(() => make("game:GuessTheNumber-v0-easy"));
  assert.equal(game.split, undefined);

  // Only a train split: played, and said to be the one trained on.
  const base = (make("tool:WordProblems-v0") as ToolTaskEnv).provider;
  const onlyTrain: TaskProvider = {
    ...base,
    splits: async () => (await base.splits()).filter((s) => s.name === "train"),
  };
  const one = await heldOutEnvironment(() => new ToolTaskEnv(onlyTrain));
  assert.deepEqual(one.split, { name: "train", trained_on: true });
  assert.equal((one.makeEnv() as ToolTaskEnv).split, "train");
});

Deno.test("heldOutLine: a single task list's line names the split it played", () => {
  const e = { ...mix(undefined, 64), env_id: "tool:WordProblems-v0" };
  assert.equal(
    heldOutLine({ ...e, split: { name: "test", trained_on: false } }),
    "held-out success: base 0.25 → trained 0.50 (64 episodes, test split)",
  );
  assert.equal(
    heldOutLine({ ...e, split: { name: "train", trained_on: true } }),
    "held-out success: base 0.25 → trained 0.50 (64 episodes, train split: its only one, trained on)",
  );
});
