/**
 * One CLI style across every task, run as a user runs them: `--help` says what the task does,
 * then its usage, exit 0; a mistake is one `error:` line (a usage mistake adds one hint line),
 * never a stack frame; a negative number reaches the range check; a taken port names the port
 * and its flag before anything is created; `deno task` describes every task.
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { serveHttp } from "../../lib/http/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** A task's script as `deno task` runs it, with its own local backend home. */
async function run(script: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", join(ROOT, script), ...args],
    env: { TINKERBENCH_HOME: await Deno.makeTempDir(), TINKER_API_KEY: "", NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
    cwd: ROOT,
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** Every task of deno.json that runs a script, with a command line that is a usage mistake. */
const TASKS: Record<string, { script: string; bad: string[]; error: RegExp }> = {
  agent: { script: "scripts/agent.ts", bad: ["--episodes", "-2"], error: /--episodes: .*>=1/ },
  bench: { script: "bench/run.ts", bad: ["nope"], error: /unknown benchmark "nope"/ },
  envs: { script: "scripts/envs.ts", bad: ["frob"], error: /unknown command "frob"/ },
  embed: { script: "scripts/embed.ts", bad: ["--nope"], error: /unknown argument --nope/ },
  "install-size": {
    script: "scripts/install_size.ts",
    bad: ["--write"],
    error: /--write needs --ref/,
  },
  export: { script: "scripts/export.ts", bad: ["one"], error: /give a checkpoint path and an/ },
  models: { script: "scripts/models.ts", bad: ["fetch"], error: /fetch takes one model name/ },
  mcp: { script: "scripts/mcp.ts", bad: ["--max-concurrent", "-1"], error: /--max-concurrent: / },
  pretrain: { script: "scripts/pretrain.ts", bad: ["--batch-size", "-1"], error: /--batch-size: / },
  proxy: { script: "scripts/proxy.ts", bad: ["--proxy-port", "-5"], error: /--proxy-port: / },
  report: { script: "scripts/report.ts", bad: [], error: /give a run directory/ },
  results: { script: "scripts/results_doc.ts", bad: ["--nope"], error: /unknown argument --nope/ },
  runs: { script: "scripts/runs.ts", bad: ["--nope"], error: /Unknown option '--nope'/ },
  serve: { script: "scripts/serve.ts", bad: ["--port", "-1"], error: /--port: .*>=0/ },
  sft: { script: "scripts/sft.ts", bad: ["--steps", "-3"], error: /--steps: / },
  train: {
    script: "scripts/train.ts",
    bad: ["--batch-size", "-1"],
    error: /groups_per_batch = -1 .*integer in \[1, 4096\]/,
  },
};

/** The error is one `error:` line, then (for a usage mistake) one hint line; no stack frame. */
function assertOneLineError(
  out: { stdout: string; stderr: string },
  pattern: RegExp,
  task: string,
  hint: boolean,
): void {
  const lines = out.stderr.split("\n").filter((l) => l.trim() !== "");
  assert.match(lines[0] ?? "", /^error: /, `${task}: ${out.stderr}`);
  assert.match(lines[0], pattern, task);
  if (hint) assert.deepEqual(lines.slice(1), [`(see deno task ${task} --help)`], task);
  else assert.equal(lines.length, 1, `${task}: ${out.stderr}`);
  assert.doesNotMatch(out.stdout + out.stderr, /^ {4}at /m, `${task}: no stack frame`);
}

for (const [task, t] of Object.entries(TASKS)) {
  Deno.test(`cli: ${task} --help says what it does, then its usage, exit 0`, async () => {
    const out = await run(t.script, ["--help"]);
    assert.equal(out.code, 0, out.stderr);
    const [about] = out.stdout.split("\n\n");
    assert.doesNotMatch(about, /^usage:/, "what the task does comes first");
    assert.ok(about.length > 40, about);
    assert.match(out.stdout, /\n\nusage: /);
    assert.match(out.stdout, new RegExp(`deno task ${task}`));
  });

  Deno.test(`cli: ${task}: a usage mistake is one error line and a hint, exit 2`, async () => {
    const out = await run(t.script, t.bad);
    assert.equal(out.code, 2, out.stderr);
    assertOneLineError(out, t.error, task, true);
    assert.doesNotMatch(out.stderr, /ambiguous/);
  });
}

Deno.test("cli: every task that runs a script is held to the CLI style here", async () => {
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  const scripts = Object.entries(config.tasks as Record<string, { command: string }>)
    .filter(([, t]) => /deno run .*(scripts|bench)\/\S+\.ts/.test(t.command))
    .map(([name]) => name);
  const covered = [...Object.keys(TASKS), "compat:sdk"];
  assert.deepEqual(scripts.filter((t) => !covered.includes(t)), []);
});

Deno.test("cli: compat:sdk --help says what it does, exit 0; a missing SDK is one line", async () => {
  const out = await run("scripts/sdk_compat.ts", ["--help"]);
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /^Runs the official Tinker Python SDK's flow[\s\S]*\n\nusage: /);
  const unset = await run("scripts/sdk_compat.ts", [], { TINKER_SDK_PYTHONPATH: "" });
  assert.equal(unset.code, 2);
  assertOneLineError(
    unset,
    /TINKER_SDK_PYTHONPATH is not set: .*tests\/compat\/README\.md/,
    "compat:sdk",
    false,
  );
});

Deno.test("cli: deno task lists a description for every task", async () => {
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  for (const [name, task] of Object.entries(config.tasks)) {
    const t = task as { description?: string; command?: string };
    assert.ok(t.description && t.description.length > 8, `task ${name} has a description`);
    assert.ok(t.command, `task ${name} has a command`);
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task"],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const listing = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.match(listing, /- train\n\s+\/\/ Train a policy with RL/);
});

Deno.test("cli: an unserved model is one line, and no backend or run directory is made", async () => {
  const logDir = join(await Deno.makeTempDir(), "run");
  const out = await run("scripts/train.ts", [
    "--model-name",
    "Qwen/Qwen3-8B",
    `--log-path=${logDir}`,
  ]);
  assert.equal(out.code, 2);
  assertOneLineError(out, /does not serve "Qwen\/Qwen3-8B".*TINKER_API_KEY/, "train", false);
  assert.doesNotMatch(out.stdout, /backend:/);
  await assert.rejects(() => Deno.stat(logDir), Deno.errors.NotFound);
});

Deno.test("cli: an unknown env id gets a did-you-mean before any backend starts", async () => {
  const home = await Deno.makeTempDir();
  const logDir = join(await Deno.makeTempDir(), "run");
  const out = await run("scripts/train.ts", [
    "--env-id",
    "game:Hangman-v0-esy",
    `--log-path=${logDir}`,
  ], { TINKERBENCH_HOME: home });
  assert.equal(out.code, 2);
  assertOneLineError(out, /Did you mean game:Hangman-v0-easy\b/, "train", true);
  assert.doesNotMatch(out.stdout, /backend:/, "no backend started");
  await assert.rejects(() => Deno.stat(logDir), Deno.errors.NotFound);
});

Deno.test("cli: a taken port is one line naming the port and the flag, before anything is made", async () => {
  const taken = await serveHttp(() => new Response("busy"), { port: 0, portFlag: "--port" });
  try {
    const port = String(taken.port);
    const named = (flag: string) =>
      new RegExp(`^error: port ${port} on 127\\.0\\.0\\.1 is already in use: .* ${flag}$`);
    const cases: [string, string, string[], string][] = [
      ["serve", "scripts/serve.ts", ["--port", port], "--port"],
      ["runs", "scripts/runs.ts", ["--port", port], "--port"],
      ["envs", "scripts/envs.ts", ["serve", "--port", port], "--port"],
      [
        "proxy",
        "scripts/proxy.ts",
        ["--proxy-host", "127.0.0.1", "--proxy-port", port],
        "--proxy-port",
      ],
    ];
    for (const [task, script, args, flag] of cases) {
      const out = await run(script, args);
      assert.equal(out.code, 2, `${task}: ${out.stderr}`);
      assertOneLineError(out, named(flag), task, false);
    }
    const logDir = join(await Deno.makeTempDir(), "run");
    const train = await run("scripts/train.ts", [
      "--source",
      "proxy",
      "--proxy-host",
      "127.0.0.1",
      "--proxy-port",
      port,
      `--log-path=${logDir}`,
    ]);
    assert.equal(train.code, 2, train.stderr);
    assertOneLineError(train, named("--proxy-port"), "train", false);
    assert.equal(train.stdout, "", "no progress bar, no backend line");
    await assert.rejects(() => Deno.stat(logDir), Deno.errors.NotFound);
  } finally {
    await taken.close();
  }
});

Deno.test("cli: a server open beyond loopback without a key says so in one warning line", async () => {
  // train --source proxy warns before it checks its port: the taken port ends it right after.
  const taken = await serveHttp(() => new Response("busy"), {
    hostname: "0.0.0.0",
    port: 0,
    portFlag: "--port",
  });
  try {
    const port = String(taken.port);
    const out = await run("scripts/train.ts", ["--source", "proxy", "--proxy-port", port]);
    assert.equal(out.code, 2, out.stderr);
    const [warning, error, ...rest] = out.stderr.split("\n").filter((l) => l.trim());
    assert.equal(
      warning,
      `warning: listening on 0.0.0.0:${port} without a key: anyone who can reach it may use ` +
        "it; close it with --api-key KEY, or --proxy-host 127.0.0.1",
    );
    assert.match(error, /^error: port \d+ on 0\.0\.0\.0 is already in use/);
    assert.deepEqual(rest, []);
    const keyed = await run("scripts/train.ts", [
      "--source",
      "proxy",
      "--proxy-port",
      port,
      "--api-key",
      "k",
    ]);
    assert.doesNotMatch(keyed.stderr, /warning/);
  } finally {
    await taken.close();
  }
  // The run API is never open: on every interface it makes a key (printed once), and
  // --no-auth beyond loopback is a usage mistake.
  const home = await Deno.makeTempDir();
  const runs = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", join(ROOT, "scripts/runs.ts"), "--host", "0.0.0.0", "--port", "0"],
    env: { TINKERBENCH_HOME: home, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stdout = runs.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!/agents: /.test(seen)) {
    const { value, done } = await stdout.read();
    if (done) break;
    seen += value;
  }
  runs.kill("SIGTERM");
  await stdout.cancel();
  const stderr = await new Response(runs.stderr).text();
  await runs.status;
  assert.match(seen, /^tinkerbench runs API listening on 0\.0\.0\.0:\d+ /);
  const key = (await Deno.readTextFile(join(home, "runs-api", "api-key"))).trim();
  assert.match(seen, new RegExp(`API key \\(shown this once; .*\\): ${key}\n`));
  assert.doesNotMatch(stderr, /warning/);
  const open = await run("scripts/runs.ts", ["--host", "0.0.0.0", "--port", "0", "--no-auth"]);
  assert.equal(open.code, 2, open.stderr);
  assert.match(open.stderr, /^error: --no-auth is for loopback only/);
});
