/**
 * `deno task runs` as a user runs it, killed and restarted: every run is still listed, a
 * training process that outlived the server is adopted, one that died meanwhile is `crashed`
 * and resumes from its checkpoint.
 */

import { assert } from "../assert.ts";
import { RunsClient } from "../../lib/runs/client.ts";
import { readMetrics } from "../../lib/runs/run_files.ts";
import { isAlive, prepare, startServerProcess, TINY_RUN, waitFor } from "./helpers.ts";

const SCRIPT = new URL("../../scripts/runs.ts", import.meta.url).pathname;

Deno.test("runs server: restarted after kill -9, it lists every run, adopts a live one, marks a dead one crashed, and resumes it", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-runs-restart-" });
  const pids: number[] = [];
  let server = await startServerProcess(dataDir);
  try {
    let client = new RunsClient({ baseUrl: server.url, dataDir });
    await prepare(client, { ...TINY_RUN, total_steps: 2, eval_episodes: 0 });
    const a = await client.startRun();
    await waitFor(
      "run A to finish",
      async () => (await client.getRun(a.run_id)).state === "finished" ? true : undefined,
    );
    await client.editConfig("total_steps", 300);
    await client.editConfig("steps_per_eval", 1);
    const b = await client.startRun();
    const running = await waitFor("run B's first step", async () => {
      const s = await client.getRun(b.run_id);
      return s.step >= 1 ? s : undefined;
    });
    const pid = running.pid!;
    pids.push(pid);

    // 1. The server dies; the training process does not.
    await server.kill();
    assert.ok(isAlive(pid, null), "the run outlives its server");
    server = await startServerProcess(dataDir);
    assert.match(server.output(), /runs: 2 recorded, 1 running, 0 queued/);
    client = new RunsClient({ baseUrl: server.url, dataDir });
    const adopted = await client.getRun(b.run_id);
    assert.deepEqual([adopted.state, adopted.pid], ["running", pid]);
    await waitFor(
      "run B to go on under the new server",
      async () => (await client.getRun(b.run_id)).step > running.step ? true : undefined,
    );

    // 2. Both die; the next server finds the run's process gone.
    await server.kill();
    Deno.kill(pid, "SIGKILL");
    await waitFor(
      "the run's process to end",
      () => Promise.resolve(isAlive(pid, null) ? undefined : true),
    );
    server = await startServerProcess(dataDir);
    client = new RunsClient({ baseUrl: server.url, dataDir });
    const list = await client.listRuns();
    assert.deepEqual(list.runs.map((r) => [r.run_id, r.state]), [
      [a.run_id, "finished"],
      [b.run_id, "crashed"],
    ]);
    const crashed = await client.getRun(b.run_id);
    assert.match(
      crashed.failure ?? "",
      /ended while the server was down.*resume continues from step \d+/,
    );
    assert.equal(
      (await client.getResults(a.run_id)).weights?.kind,
      "final",
      "A's results are intact",
    );

    // A second server on the same data dir is refused while this one lives.
    const second = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", SCRIPT, "--port", "0", "--data-dir", dataDir],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(second.code, 2);
    assert.match(new TextDecoder().decode(second.stderr), /^error: another runs server \(pid \d+/);

    const resumed = await client.resumeRun(b.run_id);
    const from = resumed.resume_from!.step;
    assert.ok(from >= 1, `resumes from its periodic checkpoint (step ${from})`);
    const again = await waitFor("run B to train again", async () => {
      const s = await client.getRun(b.run_id);
      return s.state === "running" && s.step > from ? s : undefined;
    });
    pids.push(again.pid!);
    await client.stopRun(b.run_id);
    const stopped = await waitFor("run B to stop", async () => {
      const s = await client.getRun(b.run_id);
      return s.state === "running" ? undefined : s;
    });
    assert.equal(stopped.state, "stopped");
    assert.equal(stopped.attempts, 2);
    const steps = (await readMetrics(stopped.paths.dir)).map((r) => r.step);
    assert.deepEqual(steps, steps.map((_, i) => i + 1), "the crash left no step twice");

    assert.equal(await server.interrupt(), 0);
    assert.match(server.output(), /\nstopped\n/);
  } finally {
    for (const pid of pids) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* already gone */ }
    }
    await server.kill().catch(() => undefined);
  }
});
