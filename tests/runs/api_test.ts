/**
 * The runs API over real HTTP on a free port: every endpoint, every bad input, and real training
 * runs on the local backend (started, watched, stopped, resumed, evaluated).
 */

import { assert } from "../assert.ts";
import { isAlive } from "../../lib/runs/process.ts";
import { listEnvs } from "../../lib/envs/registry.ts";
import { RunsClient } from "../../lib/runs/client.ts";
import { RunsError } from "../../lib/runs/schemas.ts";
import { type RunsServer, startRunsServer } from "../../lib/runs/server.ts";
import { HELD_OUT_EVALUATOR } from "./evaluator.ts";
import { readMetrics } from "../../lib/runs/run_files.ts";
import { readEvaluation } from "../../lib/rundir/mod.ts";
import { HELD_OUT_ENV_SEEDS } from "../../lib/util/random.ts";
import { prepare, TINY_RUN, waitFor } from "./helpers.ts";

async function withServer(
  fn: (server: RunsServer, client: RunsClient) => Promise<void>,
  opts: { apiKey?: string; stopGraceS?: number; envModules?: string[] } = {},
) {
  const server = await startRunsServer({
    evaluator: HELD_OUT_EVALUATOR,
    dataDir: await Deno.makeTempDir({ prefix: "tb-runs-" }),
    port: 0,
    pollMs: 200,
    ...opts,
  });
  try {
    await fn(server, new RunsClient({ baseUrl: server.url, apiKey: opts.apiKey }));
  } finally {
    // Leave no training process behind, whatever the test did.
    for (const run of server.service.store.listRuns(["running", "queued"])) {
      // A run that ended since it was listed has no process left to kill.
      if (run.pid && isAlive(run.pid, null)) Deno.kill(run.pid, "SIGKILL");
    }
    await server.service.manager.poll();
    await server.close();
  }
}

/** A raw request: status and JSON body. */
async function call(url: string, method: string, path: string, body?: string, key?: string) {
  const res = await fetch(url + path, {
    method,
    body,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
  });
  return { status: res.status, body: await res.json() };
}

Deno.test("runs API: success answers carry no error key; errors do", async () => {
  await withServer(async ({ url }) => {
    const answers = [
      await call(url, "GET", "/health"),
      await call(url, "GET", "/environments"),
      await call(url, "POST", "/environments/game:GuessTheNumber-v0-easy/select"),
      await call(url, "GET", "/config"),
      await call(url, "POST", "/config", '{"field":"total_steps","value":3}'),
      await call(url, "GET", "/runs"),
    ];
    for (const a of answers) {
      assert.equal(a.status, 200);
      const keys = (v: unknown): string[] =>
        Array.isArray(v)
          ? v.flatMap(keys)
          : v && typeof v === "object"
          ? Object.entries(v).flatMap(([k, x]) => [k, ...keys(x)])
          : [];
      assert.equal(keys(a.body).includes("error"), false, JSON.stringify(a.body).slice(0, 200));
    }
    const bad = await call(url, "GET", "/runs/nope");
    assert.equal(bad.status, 404);
    assert.equal(typeof bad.body.error, "string");
  });
});

Deno.test("runs API: every bad input is a clear 4xx with a JSON error, and nothing breaks", async () => {
  await withServer(async ({ url }, client) => {
    const get = (p: string) => call(url, "GET", p);
    const post = (p: string, body?: string) => call(url, "POST", p, body);
    const noEnv = /no environment selected: call rl_select_environment/;

    assert.equal((await get("/health")).body.status, "ok");
    for (
      const [status, body] of [await get("/config"), await post("/runs", "{}")].map((
        r,
      ) => [r.status, r.body])
    ) {
      assert.equal(status, 409);
      assert.match(body.error, noEnv);
    }
    assert.match((await post("/test/inference", "{}")).body.error, noEnv);

    const envs = (await get("/environments")).body;
    assert.deepEqual(envs.map((e: { name: string }) => e.name), listEnvs());
    const gtn = envs.find((e: { name: string }) => e.name === "game:GuessTheNumber-v0-easy");
    assert.equal(gtn.class_name, "GuessTheNumber");
    assert.equal(gtn.file_path, "lib/envs/guess_the_number.ts");
    assert.match(gtn.description, /guess a hidden integer.*\(easy variant\)\.$/);

    const unknownEnv = await post("/environments/game:Nope-v0/select");
    assert.equal(unknownEnv.status, 404);
    assert.match(unknownEnv.body.error, /environment "game:Nope-v0" not found/);
    assert.ok(unknownEnv.body.available.includes("game:GuessTheNumber-v0-easy"));
    // The family prefix may be left out; the id is URL-encoded or not.
    const sel = await post(`/environments/${encodeURIComponent("GuessTheNumber-v0-easy")}/select`);
    assert.equal(sel.status, 200);
    assert.equal(sel.body.environment, "game:GuessTheNumber-v0-easy");
    assert.match(sel.body.config.wandb_name, /^GuessTheNumber-v0-easy-\d{8}-\d{6}$/);

    const bad: [string, string | undefined, number, RegExp][] = [
      ["/config", '{"field":"nope","value":1}', 400, /unknown field "nope"/],
      ["/config", '{"field":"use_wandb","value":true}', 403, /use_wandb is locked/],
      ["/config", '{"field":"environment","value":"x"}', 403, /environment is locked/],
      ["/config", '{"field":"group_size","value":"four"}', 400, /group_size must be an integer/],
      [
        "/config",
        '{"field":"total_steps","value":-1}',
        400,
        /total_steps must be an integer in \[1, 1000000\]/,
      ],
      ["/config", '{"field":"temperature","value":[1]}', 400, /temperature must be a number/],
      ["/config", '{"field":"group_size",', 400, /request body is not valid JSON/],
      ["/config", "[1,2]", 400, /must be a JSON object/],
      ["/config", '{"value":3}', 400, /^field: /],
      ["/config", '{"field":"seed","value":1,"x":2}', 400, /Unrecognized key.*"x"/],
      ["/runs", '{"bogus":1}', 400, /unknown field "bogus"/],
      ["/runs", '{"lora_rank":"big"}', 400, /lora_rank must be an integer/],
      ["/runs", '{"wandb_project":5}', 400, /^wandb_project: /],
      ["/runs", "not json", 400, /not valid JSON/],
      ["/test/inference", '{"max_tokens":"lots"}', 400, /^max_tokens: /],
      ["/test/inference", '{"prompts":"hi"}', 400, /^prompts: /],
      ["/test/inference", '{"run_id":"nope"}', 404, /run "nope" not found/],
      ["/runs/nope/stop", undefined, 404, /run "nope" not found/],
      ["/runs/nope/resume", undefined, 404, /run "nope" not found/],
    ];
    for (const [path, body, status, message] of bad) {
      const r = await post(path, body);
      assert.equal(r.status, status, `${path} ${body}: ${JSON.stringify(r.body)}`);
      assert.match(r.body.error, message, `${path} ${body}`);
    }
    const locked = await post("/config", '{"field":"use_wandb","value":true}');
    assert.equal(locked.body.locked_value, null);
    for (const p of ["/runs/nope", "/runs/nope/metrics", "/no/such/route"]) {
      assert.equal((await get(p)).status, 404, p);
    }
    // None of that changed the config or created a run.
    const config = await client.getConfig();
    assert.equal(config.configurable_fields.find((f) => f.name === "group_size")?.current_value, 4);
    assert.equal((await client.listRuns()).count, 0);
    // The client raises the server's message.
    await assert.rejects(
      () => client.editConfig("use_wandb", true),
      (e: Error) => e instanceof RunsError && e.status === 403 && /locked/.test(e.message),
    );
  });
});

Deno.test("runs API: with an API key, every route but /health needs the bearer", async () => {
  await withServer(async ({ url }, client) => {
    assert.equal((await call(url, "GET", "/health")).status, 200);
    const denied = await call(url, "GET", "/environments");
    assert.equal(denied.status, 401);
    assert.match(denied.body.error, /Authorization: Bearer/);
    assert.equal((await call(url, "GET", "/environments", undefined, "wrong")).status, 401);
    assert.ok((await client.listEnvironments()).length > 0, "the client sends its key");
  }, { apiKey: "s3cret" });
});

Deno.test("runs API: a 2-step run on the local backend; step advances; results have a tinker:// path and an evaluation", async () => {
  await withServer(async (_server, client) => {
    await prepare(client, { ...TINY_RUN, total_steps: 2, steps_per_eval: 0 });
    // The later Hermes tools' body: its fields apply to this run only.
    const started = await client.startRun({
      wandb_project: "demo",
      lora_rank: 8,
      learning_rate: 0.003,
    });
    assert.equal(started.state, "running");
    assert.equal(started.config.lora_rank, 8);
    assert.equal(started.wandb_project, "demo");
    assert.match(await Deno.readTextFile(started.paths.config), /^lora_rank: 8$/m);
    const seen: number[] = [];
    const done = await waitFor("the run to finish", async () => {
      const s = await client.getRun(started.run_id);
      if (seen.at(-1) !== s.step) seen.push(s.step);
      return s.state === "running" || s.state === "queued" ? undefined : s;
    });
    assert.equal(done.state, "finished", done.failure ?? "");
    assert.equal(seen[0], 0);
    assert.equal(seen.at(-1), 2);
    assert.deepEqual([...seen].sort(), seen, "step only advances");
    assert.equal(done.total_steps, 2);
    assert.equal(done.eta_s, 0);
    assert.ok(done.reward_mean !== null && done.percent_correct !== null);
    assert.equal(done.last_checkpoint?.kind, "final");

    const results = await client.getResults(started.run_id);
    assert.match(results.tinker_path ?? "", /^tinker:\/\/.+\/sampler_weights\/final$/);
    assert.equal(results.weights?.step, 2);
    assert.deepEqual(results.history.map((h) => h.step), [1, 2]);
    assert.ok("env/all/reward/total" in results.final_metrics);
    assert.equal(results.report_path, started.paths.report);
    assert.equal(config(await client.getConfig(), "lora_rank"), 4, "the override was per run");

    const evaluated = await waitFor("the final checkpoint's evaluation", async () => {
      const s = await client.getRun(started.run_id);
      return s.eval_percent_correct === null ? undefined : s;
    });
    assert.equal(evaluated.evaluated_step, 2);
    const evals = (await client.getResults(started.run_id)).evals;
    assert.deepEqual(evals.map((e) => [e.step, e.episodes, e.failure]), [[2, 4, null]]);
    // One evaluator: the trainer's own eval.json played the same held-out episodes on the same
    // final weights, and scored them the same.
    const trainerEval = await readEvaluation(started.paths.dir);
    assert.deepEqual(trainerEval?.env_seeds, [
      HELD_OUT_ENV_SEEDS.first,
      HELD_OUT_ENV_SEEDS.first + 3,
    ]);
    assert.deepEqual(
      [evals[0].percent_correct, evals[0].reward_mean],
      [trainerEval!.trained.success, trainerEval!.trained.mean_reward],
    );

    // A finished run cannot be stopped or resumed.
    await assert.rejects(() => client.stopRun(started.run_id), /not running \(state: finished\)/);
    await assert.rejects(() => client.resumeRun(started.run_id), /finished all its 2 steps/);

    // Test inference: the env's own tasks, scored by its verifier, from the trained weights.
    const inf = await client.testInference({ run_id: started.run_id, count: 2, max_tokens: 16 });
    assert.equal(inf.results.length, 2);
    assert.match(inf.policy, /^tinker:\/\/.+sampler_weights\/final$/);
    assert.ok(inf.results.every((r) => /GuessTheNumber|guess/i.test(r.prompt)));
    assert.ok(inf.results.every((r) => typeof r.reward === "number" && r.verifier.feedback));
    // ... and free prompts answered by the base model; too long for its context is a 400.
    const base = await client.testInference({
      prompts: ["\\boxed{5}"],
      max_tokens: 8,
      temperature: 0,
    });
    assert.equal(base.policy, "base model local/tiny");
    assert.equal(base.results[0].prompt, "\\boxed{5}");
    await assert.rejects(
      () => client.testInference({ max_tokens: 200 }),
      (e: Error) =>
        e instanceof RunsError && e.status === 400 && /exceeds the model's context/.test(e.message),
    );
    assert.deepEqual((await client.listRuns()).runs.map((r) => [r.run_id, r.state, r.step]), [
      [started.run_id, "finished", 2],
    ]);
  });
});

Deno.test("runs API: stopping a running run saves an interrupted checkpoint; resume continues it; queued runs wait", async () => {
  await withServer(async (_server, client) => {
    await prepare(client, { ...TINY_RUN, total_steps: 200, eval_episodes: 0 });
    const a = await client.startRun();
    const b = await client.startRun();
    assert.equal(b.state, "queued", "one training process at a time");
    assert.match(b.message, /queued behind 1 running run/);
    const stoppedB = await client.stopRun(b.run_id);
    assert.deepEqual([stoppedB.state, stoppedB.message], [
      "stopped",
      `Stopped run ${b.run_id} before it started`,
    ]);

    await waitFor(
      "step 1",
      async () => ((await client.getRun(a.run_id)).step >= 1 ? true : undefined),
    );
    const stop = await client.stopRun(a.run_id);
    assert.equal(stop.stopping, true);
    assert.match((await client.stopRun(a.run_id)).message, /already stopping/);
    const stopped = await waitFor("the run to stop", async () => {
      const s = await client.getRun(a.run_id);
      return s.state === "running" ? undefined : s;
    });
    assert.equal(stopped.state, "stopped", stopped.failure ?? "");
    assert.equal(stopped.last_checkpoint?.kind, "interrupted");
    assert.equal(stopped.last_checkpoint?.step, stopped.step);
    assert.ok(stopped.step < 200);
    await assert.rejects(() => client.stopRun(a.run_id), /not running \(state: stopped\)/);

    const resumed = await client.resumeRun(a.run_id);
    assert.equal(resumed.resume_from?.kind, "interrupted");
    assert.match(resumed.message, new RegExp(`from its checkpoint at step ${stopped.step}`));
    await waitFor("a step past the stop", async () => {
      const s = await client.getRun(a.run_id);
      return s.step > stopped.step ? true : undefined;
    });
    assert.equal((await client.getRun(a.run_id)).attempts, 2);
    await client.stopRun(a.run_id);
    await waitFor(
      "the second stop",
      async () => (await client.getRun(a.run_id)).state === "stopped" ? true : undefined,
    );
    const rows = await readMetrics((await client.getRun(a.run_id)).paths.dir);
    assert.deepEqual(rows.map((r) => r.step), rows.map((_, i) => i + 1), "no step twice");
  });
});

Deno.test("runs API: a run that ignores its stop past the grace period is killed, and resumes from its checkpoint", async () => {
  await withServer(async (_server, client) => {
    // Enough steps that the run is still going when its first checkpoint is seen.
    await prepare(client, { ...TINY_RUN, total_steps: 40, steps_per_eval: 1, eval_episodes: 0 });
    const run = await client.startRun();
    const s = await waitFor("step 1's checkpoint", async () => {
      const s = await client.getRun(run.run_id);
      return s.last_checkpoint ? s : undefined;
    });
    // A hung trainer: frozen, it cannot act on the Ctrl-C, so only the kill ends it.
    Deno.kill(s.pid!, "SIGSTOP");
    await client.stopRun(run.run_id);
    const killed = await waitFor("the kill", async () => {
      const s = await client.getRun(run.run_id);
      return s.state === "running" ? undefined : s;
    });
    assert.equal(killed.state, "stopped");
    assert.match(killed.failure ?? "", /killed after the 0 s grace period; resumes from step \d/);
    await client.resumeRun(run.run_id);
    const done = await waitFor("the resumed run to finish", async () => {
      const s = await client.getRun(run.run_id);
      return s.state === "running" || s.state === "queued" ? undefined : s;
    });
    assert.equal(done.state, "finished", done.failure ?? "");
    assert.deepEqual(
      (await readMetrics(done.paths.dir)).map((r) => r.step),
      Array.from({ length: 40 }, (_, i) => i + 1),
    );
  }, { stopGraceS: 0 });
});

Deno.test("runs API: a run that crashes or is killed is marked crashed, says why, and the server carries on", async () => {
  await withServer(async (_server, client) => {
    // No TINKER_API_KEY: the local backend refuses the cloud model once the run starts.
    await prepare(client, { ...TINY_RUN, model_name: "Qwen/Qwen3-8B", total_steps: 2 });
    const bad = await client.startRun();
    const crashed = await waitFor("the crash", async () => {
      const s = await client.getRun(bad.run_id);
      return s.state === "running" ? undefined : s;
    });
    assert.equal(crashed.state, "crashed");
    assert.match(crashed.failure ?? "", /exited with code \d+: error: .*Qwen\/Qwen3-8B/);
    assert.equal("error" in crashed, false, "a success answer has no error key");

    await client.editConfig("model_name", "local/tiny");
    await client.editConfig("total_steps", 100);
    const run = await client.startRun();
    const s = await waitFor("step 1", async () => {
      const s = await client.getRun(run.run_id);
      return s.step >= 1 ? s : undefined;
    });
    Deno.kill(s.pid!, "SIGKILL");
    const killed = await waitFor("the kill to be noticed", async () => {
      const s = await client.getRun(run.run_id);
      return s.state === "running" ? undefined : s;
    });
    assert.equal(killed.state, "crashed");
    assert.match(
      killed.failure ?? "",
      /^the training process was killed; POST \/runs\/\w+\/resume/,
    );
    assert.equal((await client.health()).status, "ok");
    assert.equal((await client.resumeRun(run.run_id)).state, "running");
    await client.stopRun(run.run_id);
  });
});

Deno.test("runs API: a run that trains nothing is failed, with the trainer's one-line reason", async () => {
  await withServer(async (_server, client) => {
    await prepare(client, { ...TINY_RUN, total_steps: 20, max_steps_without_datums: 2 });
    const run = await client.startRun();
    const failed = await waitFor("the failure", async () => {
      const s = await client.getRun(run.run_id);
      return s.state === "running" ? undefined : s;
    });
    assert.equal(failed.state, "failed");
    assert.match(failed.failure ?? "", /^steps 1-2 trained nothing: .*; change the config/);
  });
});

const SAY_YES = new URL("./fixtures/say_yes_env.ts", import.meta.url).pathname;

Deno.test("runs API: an environment from --env-module is listed, selectable, and its runs load the module", async () => {
  await withServer(async (_server, client) => {
    const env = (await client.listEnvironments()).find((e) => e.name === "test:SayYes-v0");
    assert.deepEqual(env, {
      name: "test:SayYes-v0",
      class_name: "SayYes",
      file_path: "tests/runs/fixtures/say_yes_env.ts",
      description: "A user environment for the runs API tests: one short turn, so local/tiny " +
        "(context 256) plays it.",
    });
    const sel = await client.selectEnvironment("SayYes-v0");
    assert.equal(sel.config.env_module, SAY_YES);
    await assert.rejects(() => client.editConfig("env_module", null), /env_module is locked/);
    for (const [field, value] of Object.entries({ ...TINY_RUN, total_steps: 1 })) {
      await client.editConfig(field, value);
    }
    const inf = await client.testInference({ count: 1, max_tokens: 8 });
    assert.equal(inf.results[0].prompt, "Say yes.");
    assert.match(inf.results[0].verifier.feedback, /^(Right|No yes)\.$/);
    const run = await client.startRun();
    assert.match(
      await Deno.readTextFile(run.paths.config),
      new RegExp(`^env_module: ${SAY_YES}$`, "m"),
    );
    const done = await waitFor("the run to finish", async () => {
      const s = await client.getRun(run.run_id);
      return s.state === "running" || s.state === "queued" ? undefined : s;
    });
    assert.equal(done.state, "finished", done.failure ?? "");
  }, { envModules: [SAY_YES] });
});

function config(
  view: { configurable_fields: { name: string; current_value: unknown }[] },
  name: string,
) {
  return view.configurable_fields.find((f) => f.name === name)?.current_value;
}
