/**
 * The W&B mirror (lib/tracking) against a loopback server that answers W&B's GraphQL and
 * file_stream endpoints (./wandb_server.ts): creation with config, every row in order, the
 * summary, the end, resuming into the same run, and a server that is down or slow.
 */

import { assert } from "../assert.ts";
import { join } from "node:path";
import {
  decideWandb,
  netrcPassword,
  readWandbState,
  RunTracking,
  WandbRun,
  wandbRunUrl,
  type WandbTarget,
} from "../../lib/tracking/mod.ts";
import { ConfigError } from "../../lib/config/errors.ts";
import { WandbTestServer } from "./wandb_server.ts";

const FAST = { backoffMs: 20, maxBackoffMs: 100, timeoutMs: 2000 };

function target(srv: WandbTestServer, o: Partial<WandbTarget> = {}): WandbTarget {
  return {
    apiKey: srv.apiKey,
    baseUrl: srv.url,
    entity: null,
    project: "demo",
    displayName: "my-run",
    tags: [],
    notes: null,
    ...o,
  };
}

const row = (step: number) => ({ step, "env/all/reward/total": step / 10, "optim/lr": 1e-3 });

Deno.test("wandb: a run is created with its config, every row lands at its step in order, summary and end", async () => {
  const srv = new WandbTestServer().start();
  const dir = await Deno.makeTempDir();
  const warnings: string[] = [];
  try {
    const run = await WandbRun.open({
      target: target(srv),
      runDir: dir,
      config: { policy: { model: "local/tiny" }, max_steps: 5 },
      warn: (l) => warnings.push(l),
      ...FAST,
    });
    run.resumeFrom([]);
    for (let s = 1; s <= 5; s++) run.log(row(s));
    run.summary({ "held_out/trained/success": 0.75 });
    assert.deepEqual(await run.finish(0, 5000), { sent: true });

    const r = srv.run("demo", run.id)!;
    assert.equal(r.entity, "tester", "the key's default entity (Viewer)");
    assert.equal(r.displayName, "my-run");
    assert.deepEqual(r.config, {
      policy: { value: { model: "local/tiny" } },
      max_steps: { value: 5 },
    });
    assert.deepEqual(r.history.map((h) => h._step), [1, 2, 3, 4, 5]);
    assert.deepEqual(r.history.map((h) => h["env/all/reward/total"]), [0.1, 0.2, 0.3, 0.4, 0.5]);
    assert.equal(r.summary["held_out/trained/success"], 0.75);
    assert.equal(r.summary["env/all/reward/total"], 0.5, "the last values are the summary");
    assert.equal(r.complete, true);
    assert.equal(r.exitcode, 0);
    assert.deepEqual(warnings, []);

    const state = (await readWandbState(dir))!;
    assert.equal(state.id, run.id);
    assert.equal(state.acked_lines, 5);
    assert.equal(state.finished, true);
    assert.equal(state.url, `${srv.url}/tester/demo/runs/${run.id}`);
  } finally {
    await srv.stop();
  }
});

Deno.test("wandb: a resumed run continues the same W&B run; rows after the checkpoint are replaced, not duplicated", async () => {
  const srv = new WandbTestServer().start();
  const dir = await Deno.makeTempDir();
  try {
    const first = await WandbRun.open({ target: target(srv), runDir: dir, config: {}, ...FAST });
    first.resumeFrom([]);
    for (let s = 1; s <= 4; s++) first.log(row(s));
    await first.finish(0, 5000);

    // The process died after step 4 with its checkpoint at step 2: the directory is rewound to
    // rows 1-2, and steps 3.. are trained again (with new values).
    const second = await WandbRun.open({ target: target(srv), runDir: dir, config: {}, ...FAST });
    assert.equal(second.id, first.id);
    second.resumeFrom([row(1), row(2)]);
    for (let s = 3; s <= 6; s++) second.log({ ...row(s), again: 1 });
    await second.finish(0, 5000);

    assert.equal(srv.runs.size, 1);
    const r = srv.run("demo", first.id)!;
    assert.equal(r.upserts, 2);
    assert.deepEqual(r.history.map((h) => h._step), [1, 2, 3, 4, 5, 6]);
    assert.deepEqual(r.history.map((h) => h.again ?? 0), [0, 0, 1, 1, 1, 1]);
  } finally {
    await srv.stop();
  }
});

Deno.test("wandb: while the server is down, log() never waits; one warning; rows are sent once it is back", async () => {
  const srv = new WandbTestServer().start();
  const dir = await Deno.makeTempDir();
  const warnings: string[] = [];
  try {
    srv.failNext = 1_000_000;
    const run = await WandbRun.open({
      target: target(srv),
      runDir: dir,
      config: {},
      warn: (l) => warnings.push(l),
      ...FAST,
    });
    run.resumeFrom([]);
    // log() is synchronous: the rows are handed over while every request fails.
    for (let s = 1; s <= 2500; s++) run.log(row(s));
    assert.equal(run.behind, 2500);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(run.behind, 2500);
    assert.equal(warnings.length, 1, warnings.join("\n"));
    assert.match(warnings[0], /^warning: W&B is behind \(.*503\); rows are kept and retried/);

    srv.failNext = 0;
    const before = srv.requests.length;
    assert.deepEqual(await run.finish(0, 5000), { sent: true });
    const streamed = srv.requests.slice(before).filter((p) => p.endsWith("/file_stream"));
    assert.equal(streamed.length, 4, "3 chunks of at most 1000 lines, then the end");
    const r = srv.run("demo", run.id)!;
    assert.deepEqual(r.history.map((h) => h._step), Array.from({ length: 2500 }, (_, i) => i + 1));
    assert.equal(r.complete, true);
    assert.match(warnings[1], /^W&B: caught up/);
    assert.equal(warnings.length, 2);
  } finally {
    await srv.stop();
  }
});

Deno.test("wandb: a server that never comes back: finish gives up at its deadline with one line; a rerun sends the rows", async () => {
  const srv = new WandbTestServer().start();
  const dir = await Deno.makeTempDir();
  const warnings: string[] = [];
  try {
    const first = await WandbRun.open({
      target: target(srv),
      runDir: dir,
      config: {},
      warn: (l) => warnings.push(l),
      ...FAST,
    });
    first.resumeFrom([]);
    first.log(row(1));
    while ((await readWandbState(dir))?.acked_lines !== 1) {
      await new Promise((r) => setTimeout(r, 10));
    }
    await srv.stop();
    first.log(row(2));
    first.log(row(3));
    const t0 = performance.now();
    assert.deepEqual(await first.finish(0, 300), { sent: false });
    // 300 ms here against the 30 s default: the bound is loose enough for a busy machine.
    assert.ok(performance.now() - t0 < 10_000, "finish keeps its deadline (300 ms here)");
    assert.match(warnings.at(-1)!, /^warning: W&B: 2 rows not sent and run not finished/);
    assert.match(warnings.at(-1)!, /rerun the same command to send them/);

    // The rerun: rows 1-3 are in metrics.jsonl; W&B acknowledged one.
    srv.restart();
    const again = await WandbRun.open({ target: target(srv), runDir: dir, config: {}, ...FAST });
    again.resumeFrom([row(1), row(2), row(3)]);
    assert.deepEqual(await again.finish(0, 5000), { sent: true });
    const r = srv.run("demo", first.id)!;
    assert.deepEqual(r.history.map((h) => h._step), [1, 2, 3]);
    assert.equal(r.complete, true);
  } finally {
    await srv.stop();
  }
});

Deno.test("wandb: a slow server holds nothing up; a wrong key is one line and no retries", async () => {
  const srv = new WandbTestServer().start();
  try {
    srv.delayMs = 400;
    const run = await WandbRun.open({
      target: target(srv),
      runDir: await Deno.makeTempDir(),
      config: {},
      ...FAST,
    });
    run.resumeFrom([]);
    for (let s = 1; s <= 50; s++) run.log(row(s));
    assert.equal(run.behind, 50, "handed over at once, while the server takes 400 ms a request");
    assert.deepEqual(await run.finish(0, 10_000), { sent: true });
    assert.equal(srv.run("demo", run.id)!.history.length, 50);
    // Creation (Viewer, UpsertBucket), then few batched posts: not one request per row.
    assert.ok(srv.requests.length < 10, `${srv.requests.length} requests`);

    srv.delayMs = 0;
    const warnings: string[] = [];
    const before = srv.requests.length;
    const bad = await WandbRun.open({
      target: target(srv, { apiKey: "wrong" }),
      runDir: await Deno.makeTempDir(),
      config: {},
      warn: (l) => warnings.push(l),
      ...FAST,
    });
    bad.log(row(1));
    while (warnings.length === 0) await new Promise((r) => setTimeout(r, 10));
    bad.log(row(2)); // after giving up: counted, not kept
    assert.deepEqual(await bad.finish(0, 2000), { sent: false });
    assert.equal(srv.requests.length - before, 1, "a 401 is not retried");
    assert.match(warnings[0], /^warning: W&B: giving up: .*401 \(is WANDB_API_KEY right\?\)/);
    assert.match(warnings[1], /^warning: W&B: 2 rows not sent and run not finished/);

    // A command that fails before its run starts leaves nothing on W&B.
    const unused = await WandbRun.open({
      target: target(srv),
      runDir: await Deno.makeTempDir(),
      config: {},
      ...FAST,
    });
    const n = srv.requests.length;
    assert.deepEqual(await unused.finish(1), { sent: true });
    assert.equal(srv.requests.length, n);
  } finally {
    await srv.stop();
  }
});

Deno.test("wandb settings: the key turns it on; use_wandb and WANDB_MODE turn it off; names and URLs", () => {
  const none = { useWandb: null, project: null, runName: null };
  assert.equal(decideWandb({}, none, "/tmp/runs/r1").target, null);
  const on = decideWandb({ WANDB_API_KEY: "k", WANDB_PROJECT: "p" }, none, "/tmp/runs/r1");
  assert.deepEqual(on.target, {
    apiKey: "k",
    baseUrl: "https://api.wandb.ai",
    entity: null,
    project: "p",
    displayName: "r1",
    tags: [],
    notes: null,
  });
  const named = decideWandb(
    { WANDB_API_KEY: "k", WANDB_PROJECT: "p", WANDB_ENTITY: "team", WANDB_BASE_URL: "http://h:8/" },
    { useWandb: null, project: "gem", runName: "run-a" },
    "/tmp/x",
  );
  assert.equal(named.target?.project, "gem", "the run's own key wins over WANDB_PROJECT");
  assert.equal(named.target?.displayName, "run-a");
  assert.equal(named.target?.entity, "team");
  assert.equal(named.target?.baseUrl, "http://h:8");
  assert.equal(
    decideWandb({ WANDB_API_KEY: "k" }, { ...none, useWandb: false }, "/x").target,
    null,
  );
  assert.equal(
    decideWandb({ WANDB_API_KEY: "k", WANDB_MODE: "disabled" }, none, "/x").target,
    null,
  );
  const offline = decideWandb({ WANDB_API_KEY: "k", WANDB_MODE: "offline" }, none, "/x");
  assert.match(offline.target === null ? offline.why ?? "" : "", /not uploaded/);
  assert.throws(
    () => decideWandb({}, { ...none, useWandb: true }, "/x"),
    (e) =>
      e instanceof ConfigError && /use_wandb is true but WANDB_API_KEY is not set/.test(e.message),
  );
  assert.throws(
    () => decideWandb({ WANDB_API_KEY: "k", WANDB_MODE: "sometimes" }, none, "/x"),
    (e) => e instanceof ConfigError && /^W&B settings: WANDB_MODE: /.test(e.message),
  );
  assert.equal(
    wandbRunUrl("https://api.wandb.ai", "me", "p", "abc"),
    "https://wandb.ai/me/p/runs/abc",
  );
  assert.equal(
    wandbRunUrl("http://127.0.0.1:9", "me", "p", "abc"),
    "http://127.0.0.1:9/me/p/runs/abc",
  );
});

Deno.test("wandb: a quiet run sends heartbeats; tags and notes reach the run; a 404 is not retried", async () => {
  const srv = new WandbTestServer().start();
  try {
    const run = await WandbRun.open({
      target: target(srv, { tags: ["rl", "gem"], notes: "first try" }),
      runDir: await Deno.makeTempDir(),
      config: {},
      heartbeatMs: 100,
      ...FAST,
    });
    run.log(row(1));
    while ((srv.run("demo", run.id)?.heartbeats ?? 0) < 2) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.deepEqual(await run.finish(0, 5000), { sent: true });
    const r = srv.run("demo", run.id)!;
    assert.deepEqual(r.tags, ["rl", "gem"]);
    assert.equal(r.description, "first try");
    assert.equal(r.history.length, 1);
    assert.equal(r.complete, true);

    const warnings: string[] = [];
    const lost = await WandbRun.open({
      target: target(srv),
      runDir: await Deno.makeTempDir(),
      config: {},
      warn: (l) => warnings.push(l),
      ...FAST,
    });
    srv.failStatus = 404;
    srv.failNext = 1;
    const before = srv.requests.length;
    lost.log(row(1));
    while (warnings.length === 0) await new Promise((r) => setTimeout(r, 10));
    assert.equal(srv.requests.length - before, 1, "a 404 is not retried");
    assert.match(warnings[0], /^warning: W&B: giving up: .* answered 404/);
    assert.deepEqual(await lost.finish(0, 2000), { sent: false });

    srv.failStatus = 429;
    srv.failNext = 2;
    const limited = await WandbRun.open({
      target: target(srv),
      runDir: await Deno.makeTempDir(),
      config: {},
      warn: () => {},
      ...FAST,
    });
    limited.log(row(1));
    assert.deepEqual(await limited.finish(0, 5000), { sent: true }, "a 429 is retried");
  } finally {
    await srv.stop();
  }
});

Deno.test("wandb settings: ~/.netrc's key, WANDB_NAME, WANDB_TAGS, WANDB_NOTES, WANDB_DIR", async () => {
  const none = { useWandb: null, project: null, runName: null };
  const netrc = "# saved by wandb login\nmachine api.wandb.ai\n  login user\n  password " +
    "netrc-key\nmachine 127.0.0.1 login user password local-key\n";
  assert.equal(netrcPassword(netrc, "api.wandb.ai"), "netrc-key");
  assert.equal(netrcPassword(netrc, "127.0.0.1"), "local-key");
  assert.equal(netrcPassword(netrc, "other.host"), null);
  assert.equal(netrcPassword("default login a password any", "x.y"), "any");

  const fromNetrc = decideWandb({}, none, "/tmp/runs/r1", netrc);
  assert.equal(fromNetrc.target?.apiKey, "netrc-key");
  const local = decideWandb({ WANDB_BASE_URL: "http://127.0.0.1:9" }, none, "/x", netrc);
  assert.equal(local.target?.apiKey, "local-key", "the entry of WANDB_BASE_URL's host");
  const envWins = decideWandb({ WANDB_API_KEY: "env-key" }, none, "/x", netrc);
  assert.equal(envWins.target?.apiKey, "env-key");

  const full = decideWandb(
    {
      WANDB_API_KEY: "k",
      WANDB_NAME: "named-by-env",
      WANDB_TAGS: "rl, gem,,baseline ",
      WANDB_NOTES: "why this run",
      WANDB_DIR: "/tmp/wandb-files",
    },
    none,
    "/tmp/runs/r1",
  );
  assert.equal(full.target?.displayName, "named-by-env");
  assert.deepEqual(full.target?.tags, ["rl", "gem", "baseline"]);
  assert.equal(full.target?.notes, "why this run");
  assert.match(
    full.target ? full.notes.join("\n") : "",
    /WANDB_DIR=\/tmp\/wandb-files .*\/tmp\/runs\/r1/,
  );
  const own = decideWandb(
    { WANDB_API_KEY: "k", WANDB_NAME: "env" },
    { ...none, runName: "cfg" },
    "/x",
  );
  assert.equal(own.target?.displayName, "cfg", "the run's own name wins");
  assert.throws(
    () => decideWandb({ WANDB_API_KEY: "k", WANDB_TAGS: "x".repeat(65) }, none, "/x"),
    (e) => e instanceof ConfigError && /WANDB_TAGS/.test(e.message),
  );

  // RunTracking reads the file NETRC names (or $HOME/.netrc).
  const srv = new WandbTestServer().start();
  const home = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      join(home, ".netrc"),
      `machine 127.0.0.1\n  login user\n  password ${srv.apiKey}\n`,
    );
    const runDir = join(home, "run");
    const printed: string[] = [];
    const tracking = await RunTracking.open({
      runDir,
      names: none,
      config: {},
      env: { HOME: home, WANDB_BASE_URL: srv.url, WANDB_TAGS: "a,b" },
      print: (l) => printed.push(l),
      retry: FAST,
    });
    assert.ok(tracking.wandb, printed.join("\n"));
    tracking.wandb.log(row(1));
    assert.deepEqual(await tracking.wandb.finish(0, 5000), { sent: true });
    assert.deepEqual(srv.run("tinkerbench", tracking.wandb.id)?.tags, ["a", "b"]);
  } finally {
    await srv.stop();
  }
});
