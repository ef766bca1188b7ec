import { assert } from "../assert.ts";
import { RunsClient } from "../../lib/runs/client.ts";
import { readRunsKey } from "../../lib/runs/api_key.ts";
import { runPath } from "../../lib/rundir/mod.ts";
import { prepare, startServerProcess, TINY_RUN, waitFor } from "../runs/helpers.ts";

Deno.test("runs API: a corrupt line in one run's metrics.jsonl is skipped and reported; GET /runs still lists every run", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-rundir-" });
  const server = await startServerProcess(dataDir);
  try {
    const api = new RunsClient({ baseUrl: server.url, dataDir });
    await prepare(api, { ...TINY_RUN, total_steps: 2, eval_episodes: 0 });
    const a = (await api.startRun()).run_id;
    const b = (await api.startRun()).run_id;
    for (const id of [a, b]) {
      await waitFor(`run ${id} finished`, async () => {
        const s = await api.getRun(id);
        return s.state === "finished" ? s : undefined;
      });
    }
    // A line torn in the middle of run a's metrics file (a disk error, a bad edit).
    const dir = (await api.getRun(a)).paths.dir;
    const [first, ...rest] = (await Deno.readTextFile(runPath(dir, "metrics"))).split("\n");
    await Deno.writeTextFile(
      runPath(dir, "metrics"),
      [first, '{"step": 1.5, "env/all/rew', ...rest].join("\n"),
    );

    const list = await fetch(`${server.url}/runs`, {
      headers: { authorization: `Bearer ${readRunsKey(dataDir)}` },
    });
    assert.equal(list.status, 200);
    const body = await list.json();
    assert.deepEqual(body.runs.map((r: { run_id: string }) => r.run_id).sort(), [a, b].sort());
    const status = await api.getRun(a);
    assert.equal(status.step, 2, "the rows around the bad line are read");
    assert.deepEqual(status.file_problems, ["metrics.jsonl line 2: not valid JSON (skipped)"]);
    assert.deepEqual((await api.getRun(b)).file_problems, []);
    assert.ok(!JSON.stringify(status.file_problems).includes(dataDir), "no absolute path");
  } finally {
    await server.interrupt();
  }
});
