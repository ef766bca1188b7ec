import { assert } from "../assert.ts";
import { join } from "node:path";
import { RunLog } from "../../lib/trainer/run_log.ts";
import { readJsonl, runPath } from "../../lib/rundir/mod.ts";

Deno.test("RunLog.open removes a rollout file's temporary copy left by a killed run, and says so", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tb-run-log-" });
  const rollouts = runPath(dir, "rollouts");
  await Deno.mkdir(rollouts, { recursive: true });
  // A whole rollout file, and the temporary copy a SIGKILL left mid-write (writeFileAtomic's name).
  await Deno.writeTextFile(join(rollouts, "iteration_000003.jsonl"), "{}\n");
  await Deno.writeTextFile(join(rollouts, "iteration_000004.jsonl.4242.tmp"), '{"half');
  const warn = console.warn;
  const warned: string[] = [];
  console.warn = (m: string) => warned.push(m);
  try {
    await RunLog.open(dir);
  } finally {
    console.warn = warn;
  }
  const names = [...Deno.readDirSync(rollouts)].map((e) => e.name);
  assert.deepEqual(names, ["iteration_000003.jsonl"]);
  assert.equal(warned.length, 1);
  assert.match(warned[0], /rollouts\/iteration_000004\.jsonl\.4242\.tmp: removed/);
  const events = (await readJsonl(runPath(dir, "events"))) as { event: string; detail: string }[];
  assert.ok(events.some((e) => e.event === "run_directory" && e.detail.includes(".4242.tmp")));
});
