/**
 * Every bench suite in its smoke size, in one process (`deno task bench --smoke`,
 * bench/smoke.ts): a bench that breaks (a renamed function, a child process that no longer
 * says where it listens) fails here with one line naming the suite, within a bounded time,
 * instead of rotting unseen until someone runs it.
 */

import { assert } from "../assert.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
/** Past this the smoke run counts as hung and is killed (it took about 8 minutes here). */
const LIMIT_MS = 20 * 60_000;
/**
 * Every suite bench/run.ts knows but `learning`: its smoke run is two trainers on local/games2
 * for two steps each, about 3 minutes on its own; run it by hand with
 * `deno task bench learning --smoke`.
 */
const SUITES = [
  "client",
  "rollout",
  "pipeline",
  "openreward",
  "proxy",
  "http",
  "soak",
  "viewer",
  "examples",
  "embed_backward",
  "rl_step",
  "local_engine",
];

Deno.test("bench: every suite but learning runs in its smoke size and writes its result", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--expose-gc", "bench/run.ts", ...SUITES, "--smoke"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", TINKER_API_KEY: "" },
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), LIMIT_MS);
  const out = await child.output();
  clearTimeout(timer);
  const stderr = new TextDecoder().decode(out.stderr);
  const last = stderr.trim().split("\n").at(-1);
  assert.equal(
    out.code,
    0,
    `deno task bench --smoke exited ${out.code} (${out.signal ?? "no signal"}): ${last}`,
  );
  const dir = /smoke run: .* results in (\S+)/.exec(stderr)?.[1];
  assert.ok(dir, `no results directory in: ${stderr.slice(0, 300)}`);
  try {
    for (const suite of SUITES) {
      const result = JSON.parse(await Deno.readTextFile(`${dir}${suite}.json`));
      assert.equal(result.benchmark, suite);
      assert.equal(result.smoke, true, `${suite}: a smoke result says so`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
