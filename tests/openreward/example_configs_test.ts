/**
 * Shipped tool-using examples that train from their first step: both OpenReward configs (the
 * mix's ORS server started in process), a tool game on `local/tools`, and the user environment
 * of `examples/my_env.ts`, each with the command its header gives, cut to one step.
 */
import { join } from "node:path";
import { assert } from "../assert.ts";
import { readJsonl } from "../../lib/rundir/mod.ts";
import { startOrsServer } from "../../lib/openreward/mod.ts";
import { listToolEnvironments } from "../../lib/envs/registry.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** One step of `deno task train` with these arguments; the step's metrics row. */
async function oneStep(args: string[]): Promise<Record<string, number>> {
  const logDir = join(await Deno.makeTempDir(), "run");
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", join(ROOT, "scripts/train.ts"), ...args, `--log-path=${logDir}`],
    env: { TINKERBENCH_HOME: await Deno.makeTempDir(), TINKER_API_KEY: "", NO_COLOR: "1" },
    cwd: ROOT,
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const rows = (await readJsonl(join(logDir, "metrics.jsonl"))) as Record<string, number>[];
  assert.equal(rows.length, 1);
  return rows[0];
}

Deno.test("configs/openreward-multi.yaml trains on datums from its first step (its ORS server in process)", async () => {
  const tools = listToolEnvironments();
  const server = await startOrsServer({
    environments: [tools["tool:GuessTheNumber-v0-easy"]],
  });
  try {
    const row = await oneStep([
      "--config_path=configs/openreward-multi.yaml",
      "--overrides",
      "max_steps=1",
      "eval.episodes=0",
      `environments.guessthenumber-v0-easy.base_url=${server.url}`,
    ]);
    assert.ok(row["train/datums"] > 0, JSON.stringify(row));
  } finally {
    await server.close();
  }
});

/** Examples run in process, each with its header's command cut to one step, no evaluation. */
const ONE_STEP: Record<string, string[]> = {
  "the tool games on local/tools (tool:GuessTheNumber-v0-easy)": [
    "--env-id=tool:GuessTheNumber-v0-easy",
    "--model-name=local/tools",
    "--max-tokens=96",
  ],
  "configs/openreward-single.yaml": ["--config_path=configs/openreward-single.yaml"],
  "examples/my_env.ts (its partial credit differs within groups)": [
    "--env-module=examples/my_env.ts",
    "--env-id=my:Echo-v0",
    "--model-name=local/tools",
    "--group-size=8",
  ],
};

for (const [name, args] of Object.entries(ONE_STEP)) {
  Deno.test(`${name} trains on datums from its first step`, async () => {
    const row = await oneStep([...args, "--max-steps=1", "--eval.episodes=0"]);
    assert.ok(row["train/datums"] > 0, JSON.stringify(row));
  });
}
