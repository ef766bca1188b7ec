/**
 * `deno task train` (environments and `--source proxy`) and `deno task sft` with
 * `WANDB_API_KEY` and `WANDB_BASE_URL` set to a loopback server that answers W&B's GraphQL and
 * file_stream endpoints: the run appears with its config and names, W&B's history is
 * metrics.jsonl line for line (also after a kill -9 and a resume), the held-out evaluation is in
 * the summary, and a W&B server that is down changes nothing in the run.
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { readJsonl } from "../../lib/rundir/mod.ts";
import { readWandbState } from "../../lib/tracking/mod.ts";
import { WandbTestServer } from "./wandb_server.ts";
import { runAgent } from "../../lib/proxy/agent.ts";

import { finish, train } from "../scripts/train_process.ts";

const TINY = [
  "--model-name=local/tiny",
  // A task local/tiny's random answers half solve: every step has something to train.
  "--env-id=debug:EvenFirstByte-v0",
  "--batch-size=1",
  "--group-size=2",
  "--max-tokens=8",
  "--save-interval=2",
];

/** W&B's history without the keys W&B adds, as metrics.jsonl has it. */
function plain(history: Record<string, unknown>[]): Record<string, unknown>[] {
  return history.map(({ _step: _, _runtime: _r, _timestamp: _t, ...row }) => row);
}

Deno.test("train + W&B: kill -9 mid-run and rerun: one W&B run whose history is metrics.jsonl, config, names, held-out summary, finished", async () => {
  const srv = new WandbTestServer().start();
  try {
    const home = await Deno.makeTempDir();
    const logDir = join(await Deno.makeTempDir(), "run");
    const env = { WANDB_API_KEY: srv.apiKey, WANDB_BASE_URL: srv.url };
    const args = [
      ...TINY,
      "--max-steps=6",
      `--log-path=${logDir}`,
      "wandb_project=gem-demo",
      "wandb_name=first-try",
      "--eval.episodes=4",
    ];
    const first = train(args, home, env);
    const metrics = join(logDir, "metrics.jsonl");
    // Up to 3 minutes: three steps, compiles first, on a busy machine (60 s was the limit).
    for (let i = 0; i < 1800 && (await readJsonl(metrics)).length < 3; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    first.kill("SIGKILL");
    await finish(first);
    const id = (await readWandbState(logDir))!.id;

    const second = await finish(train(args, home, env));
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, new RegExp(`^W&B: run ${id} in project gem-demo at `, "m"));
    assert.match(second.stdout, /^resuming after step \d+/m);
    assert.match(second.stdout, new RegExp(`^W&B: ${srv.url}/tester/gem-demo/runs/${id}$`, "m"));

    assert.equal(srv.runs.size, 1, "the resumed process continued the same W&B run");
    const run = srv.run("gem-demo", id)!;
    assert.equal(run.displayName, "first-try");
    const config = run.config as Record<string, { value: Record<string, unknown> }>;
    assert.equal(config.policy.value.model, "local/tiny");
    assert.equal(config.logging.value.project_name, "gem-demo");
    const rows = await readJsonl(metrics);
    assert.deepEqual(rows.map((r) => (r as { step: number }).step), [1, 2, 3, 4, 5, 6]);
    assert.deepEqual(plain(run.history), rows, "W&B's history is metrics.jsonl, line for line");
    assert.deepEqual(run.history.map((h) => h._step), [1, 2, 3, 4, 5, 6]);
    const evaluation = JSON.parse(await Deno.readTextFile(join(logDir, "eval.json")));
    assert.equal(run.summary["held_out/trained/success"], evaluation.trained.success);
    assert.equal(run.summary["held_out/base/success"], evaluation.base.success);
    assert.equal(run.summary.step, 6);
    assert.equal(run.complete, true);
    assert.equal(run.exitcode, 0);
  } finally {
    await srv.stop();
  }
});

Deno.test("train + W&B: with the W&B server down the run trains exactly as without it, says so in one line, and exits 0", async () => {
  const srv = new WandbTestServer().start();
  const url = srv.url;
  await srv.stop(); // nothing listens there now
  const home = await Deno.makeTempDir();
  const logDir = join(await Deno.makeTempDir(), "run");
  const out = await finish(train(
    [
      ...TINY,
      "--max-steps=3",
      `--log-path=${logDir}`,
      "--eval.episodes=0",
    ],
    home,
    { WANDB_API_KEY: "k", WANDB_BASE_URL: url },
  ));
  assert.equal(out.code, 0, out.stderr);
  const rows = await readJsonl(join(logDir, "metrics.jsonl"));
  assert.equal(rows.length, 3);
  const behind = out.stderr.split("\n").filter((l) => l.startsWith("warning: W&B is behind"));
  assert.equal(behind.length, 1, out.stderr);
  assert.match(
    out.stderr,
    /^warning: W&B: 3 rows not sent and run not finished .*rerun the same command/m,
  );
  const ckpts = (await readJsonl(join(logDir, "checkpoints.jsonl"))) as { kind: string }[];
  assert.equal(ckpts.at(-1)?.kind, "final");
});

Deno.test("train + W&B: use_wandb=false and WANDB_MODE=disabled keep a run off W&B; use_wandb=true without a key is one error line", async () => {
  const srv = new WandbTestServer().start();
  try {
    const home = await Deno.makeTempDir();
    const env = { WANDB_API_KEY: srv.apiKey, WANDB_BASE_URL: srv.url };
    const off = await finish(train(
      [
        ...TINY,
        "--max-steps=1",
        `--log-path=${join(await Deno.makeTempDir(), "run")}`,
        "--eval.episodes=0",
        "use_wandb=false",
      ],
      home,
      env,
    ));
    assert.equal(off.code, 0, off.stderr);
    const disabled = await finish(train(
      [
        ...TINY,
        "--max-steps=1",
        `--log-path=${join(await Deno.makeTempDir(), "run")}`,
        "--eval.episodes=0",
      ],
      home,
      { ...env, WANDB_MODE: "disabled" },
    ));
    assert.equal(disabled.code, 0, disabled.stderr);
    assert.equal(srv.requests.length, 0);
    assert.doesNotMatch(off.stdout + disabled.stdout, /W&B/);

    const missing = await finish(train(["--max-steps=1", "use_wandb=true"], home, {}));
    assert.equal(missing.code, 2);
    assert.match(
      missing.stderr,
      /^error: use_wandb is true but WANDB_API_KEY is not set \(nor saved by `wandb login` in ~\/.netrc\)\n/,
    );
  } finally {
    await srv.stop();
  }
});

Deno.test("sft + W&B: every step's row in order, the names from the flags, finished", async () => {
  const srv = new WandbTestServer().start();
  try {
    const logDir = join(await Deno.makeTempDir(), "sft");
    const p = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("../../scripts/sft.ts", import.meta.url).pathname,
        "--steps=3",
        "--batch-size=2",
        `--log-path=${logDir}`,
        "--wandb-project=sft-demo",
        "--wandb-name=alphabet",
      ],
      env: {
        TINKERBENCH_HOME: await Deno.makeTempDir(),
        TINKER_API_KEY: "",
        NO_COLOR: "1",
        WANDB_API_KEY: srv.apiKey,
        WANDB_BASE_URL: srv.url,
      },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const out = await finish(p);
    assert.equal(out.code, 0, out.stderr);
    const id = (await readWandbState(logDir))!.id;
    const run = srv.run("sft-demo", id)!;
    assert.equal(run.displayName, "alphabet");
    assert.equal((run.config.method as { value: string }).value, "sft");
    const rows = await readJsonl(join(logDir, "metrics.jsonl"));
    assert.deepEqual(plain(run.history), rows);
    assert.deepEqual(run.history.map((h) => h._step), [1, 2, 3]);
    assert.equal(run.complete, true);
    assert.match(out.stdout, new RegExp(`^W&B: ${srv.url}/tester/sft-demo/runs/${id}$`, "m"));
  } finally {
    await srv.stop();
  }
});

Deno.test({
  name:
    "train --source proxy + W&B: the proxy's step rows are the W&B history, and the run is finished",
  sanitizeResources: false,
  async fn() {
    const srv = new WandbTestServer().start();
    try {
      const home = await Deno.makeTempDir();
      const logDir = join(home, "run");
      const child = train(
        [
          "--source=proxy",
          "--proxy-host=127.0.0.1",
          "--proxy-port=0",
          "--method=opd",
          "--max-steps=2",
          "--batch-size=4",
          `--log-path=${logDir}`,
          "wandb_name=proxy-run",
        ],
        home,
        { WANDB_API_KEY: srv.apiKey, WANDB_BASE_URL: srv.url },
      );
      let stdout = "";
      const { promise: url, resolve } = Promise.withResolvers<string>();
      const reading = (async () => {
        for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
          stdout += chunk;
          const m = /proxy: serving \S+, listening on \S+ \(clients here: (\S+)\)/.exec(stdout);
          if (m) resolve(m[1]);
        }
        resolve("");
      })();
      const stderr = new Response(child.stderr).text();
      const stop = new AbortController();
      child.status.then(() => stop.abort());
      await runAgent({
        envId: "game:GuessTheNumber-v0-easy",
        baseUrl: await url,
        episodes: 40,
        concurrency: 4,
        maxTokens: 48,
        sendRewards: false,
        signal: stop.signal,
      });
      const status = await child.status;
      await reading;
      assert.equal(status.code, 0, await stderr);
      const id = (await readWandbState(logDir))!.id;
      const run = srv.run("tinkerbench", id)!;
      assert.equal(run.displayName, "proxy-run");
      const rows = await readJsonl(join(logDir, "metrics.jsonl"));
      assert.equal(rows.length, 2);
      assert.deepEqual(plain(run.history), rows);
      assert.ok("proxy/turns" in run.history[0]);
      assert.equal(run.complete, true);
    } finally {
      await srv.stop();
    }
  },
});
