import { join } from "node:path";
import { assert } from "../assert.ts";
import { lockRunDir, RUN_FILES, RunDirLockedError, runPath } from "../../lib/rundir/mod.ts";

const HOLDER = new URL("./hold_lock.ts", import.meta.url).pathname;

/** Starts a process that holds `dir`'s lock; resolves once it holds it. */
async function holder(dir: string): Promise<Deno.ChildProcess> {
  const p = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", HOLDER, dir],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = p.stdout.getReader();
  const { value } = await reader.read();
  assert.equal(new TextDecoder().decode(value).trim(), "locked");
  reader.releaseLock();
  return p;
}

Deno.test("lockRunDir: a directory another live process writes is refused in one line naming its pid", async () => {
  const dir = join(await Deno.makeTempDir(), "run");
  const other = await holder(dir);
  try {
    const err = await lockRunDir(dir).then(() => null, (e) => e);
    assert.ok(err instanceof RunDirLockedError, String(err));
    assert.equal(err.holder.pid, other.pid);
    assert.match(err.message, new RegExp(`\\(pid ${other.pid}, since `));
    assert.doesNotMatch(err.message, /\n/);
  } finally {
    await other.stdin.close();
    await other.output();
  }
  // It ended normally: its exit handler released the lock, and the directory is free.
  await assert.rejects(() => Deno.stat(runPath(dir, "lock")), Deno.errors.NotFound);
  const mine = await lockRunDir(dir);
  assert.equal(mine.tookOver, null);
  mine.release();
});

Deno.test("lockRunDir: a stale lock (its pid is gone) is named and taken over", async () => {
  const dir = join(await Deno.makeTempDir(), "run");
  const other = await holder(dir);
  other.kill("SIGKILL"); // no exit handler runs: the lock stays, stale
  await other.output();
  const stale = JSON.parse(await Deno.readTextFile(runPath(dir, "lock")));
  assert.equal(stale.pid, other.pid);
  const lock = await lockRunDir(dir);
  assert.equal(lock.tookOver?.pid, other.pid);
  const now = JSON.parse(await Deno.readTextFile(runPath(dir, "lock")));
  assert.equal(now.pid, Deno.pid);
  lock.release();
  assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), []);
});

Deno.test("lockRunDir: a pid reused by another program is not the holder (its start time differs)", async () => {
  const dir = join(await Deno.makeTempDir(), "run");
  await Deno.mkdir(dir);
  // pid 1 is alive (init), but with another start time: the process that wrote it is gone.
  await Deno.writeTextFile(
    runPath(dir, "lock"),
    JSON.stringify({ pid: 1, start: "0", host: (await import("node:os")).hostname(), since: "x" }),
  );
  const lock = await lockRunDir(dir);
  assert.equal(lock.tookOver?.pid, 1);
  lock.release();
});

Deno.test("lockRunDir: the holding process may open its directory again; released, it is free", async () => {
  const dir = join(await Deno.makeTempDir(), "run");
  const a = await lockRunDir(dir);
  const b = await lockRunDir(dir);
  assert.equal(a, b);
  assert.equal(RUN_FILES.lock, "run.lock");
  a.release();
  await assert.rejects(() => Deno.stat(runPath(dir, "lock")), Deno.errors.NotFound);
});
