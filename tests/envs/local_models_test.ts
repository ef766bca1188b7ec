import { join } from "node:path";
import { assert } from "../assert.ts";
import { localModelMismatch, type LocalRun } from "../../lib/envs/local_models.ts";
import { make } from "../../lib/envs/registry.ts";
import { finish, train } from "../scripts/train_process.ts";

const RUN: LocalRun = {
  envId: "tool:GuessTheNumber-v0-easy",
  model: "local/games2",
  teacher: "local/games2",
  method: "rl",
  hint: "next_observation",
  anyTeacher: false,
};

Deno.test("local models: a model the environment does not name is one line naming the one to use", () => {
  const line = localModelMismatch({ train: ["local/tools"] }, RUN);
  assert.equal(
    line,
    "rollout.env_id tool:GuessTheNumber-v0-easy is meant for local/tools: local/games2 cannot " +
      "train on it; pass --model-name local/tools",
  );
  assert.equal(
    localModelMismatch({ train: ["local/tools"] }, { ...RUN, model: "local/tools" }),
    null,
  );
  // A cloud model, or an environment that names none, is not judged.
  assert.equal(
    localModelMismatch({ train: ["local/tools"] }, { ...RUN, model: "Qwen/Qwen3-8B" }),
    null,
  );
  assert.equal(localModelMismatch(undefined, RUN), null);
});

Deno.test("local models: combine needs a teacher taught to use the hint", () => {
  const models = { combine: ["local/hint"] };
  const combine = { ...RUN, envId: "game:GuessTheNumber-v0-easy", method: "combine" as const };
  assert.match(
    localModelMismatch(models, combine)!,
    /^rollout.env_id game:GuessTheNumber-v0-easy is meant for local\/hint with --method combine: local\/games2 was not taught to use the hint.*pass --model-name local\/hint, or use --method rl/,
  );
  // A separate teacher is named by its own flag.
  assert.match(
    localModelMismatch(models, { ...combine, model: "local/hint", teacher: "local/games" })!,
    /pass --teacher-model-name local\/hint/,
  );
  assert.equal(
    localModelMismatch(models, { ...combine, model: "local/hint", teacher: "local/hint" }),
    null,
  );
  // rl reads no hint; a judge's hints are not the ones the model was taught; 0 trains anyway.
  assert.equal(localModelMismatch(models, { ...combine, method: "rl" }), null);
  assert.equal(localModelMismatch(models, { ...combine, hint: "judge" }), null);
  assert.equal(localModelMismatch(models, { ...combine, anyTeacher: true }), null);
  // No list for the method: not judged here.
  assert.equal(localModelMismatch(models, { ...combine, method: "opd" }), null);
});

Deno.test("local models: an empty list says no local model learns it with the method", () => {
  const opd = { ...RUN, envId: "game:GuessTheNumber-v0-easy", method: "opd" as const };
  assert.match(
    localModelMismatch({ opd: [] }, { ...opd, model: "local/hint", teacher: "local/hint" })!,
    /^rollout.env_id game:GuessTheNumber-v0-easy: no local model learns it with --method opd .*use --method rl/,
  );
});

Deno.test("local models: the tool environments name local/tools", () => {
  assert.deepEqual(make("tool:GuessTheNumber-v0-easy").localModels?.train, ["local/tools"]);
  assert.deepEqual(make("tool:WordProblems-v0").localModels?.train, ["local/tools"]);
  assert.equal(make("game:Mastermind-v0-easy").localModels?.train, undefined);
});

Deno.test("local models: a run of a tool environment with local/games2 stops in one line before it trains", async () => {
  const home = await Deno.makeTempDir();
  const logDir = join(home, "run");
  const out = await finish(train([
    "--env-id=tool:GuessTheNumber-v0-easy",
    "--model-name=local/games2",
    "--max-steps=1",
    `--log-path=${logDir}`,
  ], home));
  assert.equal(out.code, 2, out.stderr);
  // One line (and the CLI's usual pointer to --help).
  assert.equal(
    out.stderr.split("\n")[0],
    "error: rollout.env_id tool:GuessTheNumber-v0-easy is meant for local/tools: local/games2 " +
      "cannot train on it; pass --model-name local/tools",
  );
  // Nothing trained: no run directory was made.
  assert.equal(await Deno.stat(logDir).then(() => true, () => false), false);
});

Deno.test("local models: GuessTheNumber names no local model for opd or combine", () => {
  assert.deepEqual(make("game:GuessTheNumber-v0-easy").localModels?.combine, []);
  assert.deepEqual(make("game:GuessTheNumber-v0-easy").localModels?.opd, []);
  assert.equal(make("game:GuessTheNumber-v0-easy").localModels?.train, undefined);
});

Deno.test("local models: --method combine with local/hint stops in one line saying to use rl", async () => {
  const home = await Deno.makeTempDir();
  const logDir = join(home, "run");
  const out = await finish(
    train(
      ["--method=combine", "--model-name=local/hint", "--max-steps=1", `--log-path=${logDir}`],
      home,
    ),
  );
  assert.equal(out.code, 2, out.stderr);
  assert.match(
    out.stderr.split("\n")[0],
    /^error: rollout.env_id game:GuessTheNumber-v0-easy: no local model learns it with --method combine .*use --method rl/,
  );
  assert.equal(await Deno.stat(logDir).then(() => true, () => false), false);
});
