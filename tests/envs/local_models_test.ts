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

Deno.test("local models: opd and combine need a teacher taught to use the hint", () => {
  const models = { opd: ["local/hint"] };
  const opd = { ...RUN, envId: "game:GuessTheNumber-v0-easy", method: "opd" as const };
  assert.match(
    localModelMismatch(models, opd)!,
    /^rollout.env_id game:GuessTheNumber-v0-easy is meant for local\/hint with --method opd: local\/games2 was not taught to use the hint.*pass --model-name local\/hint, or use --method rl$/,
  );
  // A separate teacher is named by its own flag.
  assert.match(
    localModelMismatch(models, { ...opd, model: "local/hint", teacher: "local/games" })!,
    /pass --teacher-model-name local\/hint/,
  );
  assert.equal(
    localModelMismatch(models, { ...opd, model: "local/hint", teacher: "local/hint" }),
    null,
  );
  // rl reads no hint; a judge's hints are not the ones the model was taught.
  assert.equal(localModelMismatch(models, { ...opd, method: "rl" }), null);
  assert.equal(localModelMismatch(models, { ...opd, hint: "judge" }), null);
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
