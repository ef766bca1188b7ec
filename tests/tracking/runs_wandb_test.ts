/**
 * A run started through the run API (Hermes's tools) is logged to W&B when the runs server has
 * `WANDB_API_KEY`: its training process creates the W&B run under the run's name and
 * `wandb_project`, and the API reports the run's `wandb_url`.
 */

import { assert } from "../assert.ts";
import { startRunsServer } from "../../lib/runs/server.ts";
import { HELD_OUT_EVALUATOR } from "../runs/evaluator.ts";
import { RunsClient } from "../../lib/runs/client.ts";
import { prepare, TINY_RUN, waitFor } from "../runs/helpers.ts";
import { WandbTestServer } from "./wandb_server.ts";

Deno.test("runs API + W&B: the run's W&B run has its name and project, every step, and the API reports wandb_url", async () => {
  const wandb = new WandbTestServer().start();
  // The runs server passes its environment to the training processes it starts.
  Deno.env.set("WANDB_API_KEY", wandb.apiKey);
  Deno.env.set("WANDB_BASE_URL", wandb.url);
  const server = await startRunsServer({
    evaluator: HELD_OUT_EVALUATOR,
    dataDir: await Deno.makeTempDir({ prefix: "tb-runs-" }),
    port: 0,
    pollMs: 200,
  });
  try {
    const client = new RunsClient({ baseUrl: server.url });
    await prepare(client, { ...TINY_RUN, total_steps: 2, steps_per_eval: 0 });
    const started = await client.startRun({ wandb_project: "hermes-demo" });
    const done = await waitFor("the run to finish", async () => {
      const s = await client.getRun(started.run_id);
      return s.state === "running" || s.state === "queued" ? undefined : s;
    });
    assert.equal(done.state, "finished", done.failure ?? "");
    const results = await client.getResults(started.run_id);
    const m = new RegExp(`^${wandb.url}/tester/hermes-demo/runs/([a-z0-9]{8})$`)
      .exec(results.wandb_url ?? "");
    assert.ok(m, `wandb_url ${results.wandb_url}`);
    assert.equal(done.wandb_url, results.wandb_url);
    const run = wandb.run("hermes-demo", m[1])!;
    assert.equal(run.displayName, started.name);
    assert.deepEqual(run.history.map((h) => h._step), [1, 2]);
    assert.equal(run.complete, true);
  } finally {
    for (const run of server.service.store.listRuns(["running", "queued"])) {
      if (run.pid) Deno.kill(run.pid, "SIGKILL");
    }
    await server.service.manager.poll();
    await server.close();
    Deno.env.delete("WANDB_API_KEY");
    Deno.env.delete("WANDB_BASE_URL");
    await wandb.stop();
  }
});
