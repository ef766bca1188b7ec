import { join } from "node:path";
import { assert } from "../assert.ts";
import { LeaseError, type RunRecord, RunStore } from "../../lib/runs/store.ts";
import { isAlive, processStart } from "../../lib/runs/process.ts";

function record(id: string): RunRecord {
  return {
    id,
    name: `name-${id}`,
    environment: "game:GuessTheNumber-v0-easy",
    state: "queued",
    config: { total_steps: 3, model_name: "local/tiny" },
    wandbProject: null,
    runDir: `/tmp/${id}`,
    createdAt: new Date().toISOString(),
    queuedAt: new Date().toISOString(),
    startedAt: null,
    endedAt: null,
    elapsedBeforeS: 0,
    attempts: 0,
    pid: null,
    pidStart: null,
    exitCode: null,
    stopRequestedAt: null,
    error: null,
  };
}

Deno.test("runs store: records survive reopening; state changes compare and set", async () => {
  const path = join(await Deno.makeTempDir(), "runs.db");
  const a = new RunStore(path);
  a.insertRun(record("aaaa0001"));
  a.insertRun(record("aaaa0002"));
  assert.equal(a.updateRun("aaaa0001", { state: "running", pid: 42 }, ["queued"]), true);
  // A second path trying the same move finds the state already changed.
  assert.equal(a.updateRun("aaaa0001", { state: "running" }, ["queued"]), false);
  a.putEval({
    runId: "aaaa0001",
    checkpoint: "tinker://x/weights/final",
    step: 3,
    kind: "final",
    episodes: 4,
    percentCorrect: 0.25,
    rewardMean: 0.5,
    error: null,
    createdAt: new Date().toISOString(),
  });
  a.setSetting("selection", { environment: "e", config: { a: 1 } });
  a.close();

  const b = new RunStore(path);
  assert.deepEqual(b.listRuns().map((r) => [r.id, r.state, r.pid]), [
    ["aaaa0001", "running", 42],
    ["aaaa0002", "queued", null],
  ]);
  assert.deepEqual(b.getRun("aaaa0002")?.config, { total_steps: 3, model_name: "local/tiny" });
  assert.equal(b.getRun("nope"), null);
  assert.deepEqual(b.listRuns(["queued"]).map((r) => r.id), ["aaaa0002"]);
  assert.equal(b.evalsFor("aaaa0001")[0].percentCorrect, 0.25);
  assert.deepEqual(b.getSetting("selection"), { environment: "e", config: { a: 1 } });
  // A record with an unknown state never gets in.
  assert.throws(() => b.updateRun("aaaa0002", { state: "bogus" as "queued" }), /CHECK constraint/);
  b.close();
});

Deno.test("runs store: one live server per data dir; a dead holder's lease is taken over", async () => {
  const path = join(await Deno.makeTempDir(), "runs.db");
  const holder = new Deno.Command("sleep", { args: ["30"] }).spawn();
  try {
    const first = new RunStore(path);
    first.acquireLease({ pid: holder.pid, start: processStart(holder.pid) }, isAlive);
    first.close();
    const second = new RunStore(path);
    assert.throws(
      () => second.acquireLease({ pid: Deno.pid, start: processStart(Deno.pid) }, isAlive),
      (e: Error) =>
        e instanceof LeaseError && e.message.includes(`pid ${holder.pid}`) &&
        e.message.includes("--data-dir"),
    );
    holder.kill("SIGKILL");
    await holder.status;
    second.acquireLease({ pid: Deno.pid, start: processStart(Deno.pid) }, isAlive);
    second.releaseLease(Deno.pid);
    second.close();
  } finally {
    try {
      holder.kill("SIGKILL");
    } catch { /* already gone */ }
    await holder.status;
  }
});

Deno.test("runs process: a reused pid with another start time is not the run's process", () => {
  const start = processStart(Deno.pid);
  assert.ok(start !== null, "/proc is readable here");
  assert.equal(isAlive(Deno.pid, start), true);
  assert.equal(isAlive(Deno.pid, String(Number(start) + 1)), false);
  assert.equal(isAlive(2 ** 22 + 7, null), false);
});

Deno.test("runs store: a database from before the failed state is migrated, its runs kept", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tb-store-migrate-" });
  const path = `${dir}/runs.db`;
  const { DatabaseSync } = await import("node:sqlite");
  const old = new DatabaseSync(path);
  old.exec(`CREATE TABLE runs (
  id TEXT PRIMARY KEY, name TEXT NOT NULL, environment TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued','running','finished','stopped','crashed')),
  config TEXT NOT NULL, wandb_project TEXT, run_dir TEXT NOT NULL, created_at TEXT NOT NULL,
  queued_at TEXT NOT NULL, started_at TEXT, ended_at TEXT,
  elapsed_before_s REAL NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, pid INTEGER,
  pid_start TEXT, exit_code INTEGER, stop_requested_at TEXT, error TEXT
);
INSERT INTO runs (id, name, environment, state, config, run_dir, created_at, queued_at)
VALUES ('abcd1234', 'old', 'game:GuessTheNumber-v0-easy', 'finished', '{}', '/tmp/x', 't', 't');`);
  old.close();
  const store = new RunStore(path);
  assert.equal(store.getRun("abcd1234")?.state, "finished");
  store.updateRun("abcd1234", { state: "failed", error: "steps 1-5 trained nothing" });
  assert.equal(store.getRun("abcd1234")?.state, "failed");
  store.close();
});
