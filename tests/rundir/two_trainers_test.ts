import { join } from "node:path";
import { assert } from "../assert.ts";
import { LockHolderSchema, runPath } from "../../lib/rundir/mod.ts";

const DENO_JSON = new URL("../../deno.json", import.meta.url).pathname;

/** `deno task train ARGS` as a user types it, on its own local backend home. */
function denoTaskTrain(args: string[], home: string): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["task", "--config", DENO_JSON, "train", ...args],
    env: { TINKERBENCH_HOME: home, TINKER_API_KEY: "", NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

Deno.test("two `deno task train` on one --log-path: the second exits non-zero with one line naming the first's pid", async () => {
  const home = await Deno.makeTempDir();
  const logDir = join(await Deno.makeTempDir(), "run");
  const args = [
    "--model-name=local/tiny",
    "--env-id=debug:EvenFirstByte-v0",
    "--max-steps=100000",
    "--batch-size=1",
    "--group-size=2",
    "--max-tokens=8",
    "--eval.episodes=0",
    `--log-path=${logDir}`,
  ];
  const first = denoTaskTrain(args, home);
  let trainerPid: number | null = null;
  try {
    // The first trainer holds the directory once it writes its status.
    for (let i = 0; i < 1200 && trainerPid === null; i++) {
      await new Promise((r) => setTimeout(r, 100));
      try {
        await Deno.stat(runPath(logDir, "status"));
        const lock = JSON.parse(await Deno.readTextFile(runPath(logDir, "lock")));
        trainerPid = LockHolderSchema.parse(lock).pid;
      } catch {
        // not started yet
      }
    }
    assert.ok(trainerPid !== null, "the first trainer started");
    const second = await denoTaskTrain(args, home).output();
    const stderr = new TextDecoder().decode(second.stderr)
      .split("\n")
      .filter((l) => l.trim() !== "" && !l.startsWith("Task train ")); // deno task's own echo
    assert.notEqual(second.code, 0);
    assert.equal(stderr.length, 1, stderr.join("\n"));
    assert.match(
      stderr[0],
      new RegExp(`^error: .*run is being written by another trainer \\(pid ${trainerPid}, since `),
    );
    // The first one was not disturbed: it still holds the directory and goes on.
    const lock = LockHolderSchema.parse(
      JSON.parse(await Deno.readTextFile(runPath(logDir, "lock"))),
    );
    assert.equal(lock.pid, trainerPid);
  } finally {
    if (trainerPid !== null) Deno.kill(trainerPid, "SIGKILL");
    try {
      first.kill("SIGKILL");
    } catch {
      // deno task already ended with its trainer
    }
    await first.output();
  }
});
