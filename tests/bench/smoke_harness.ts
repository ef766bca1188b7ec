/**
 * Runs bench suites in their smoke size in one process (`deno task bench <suites> --smoke`,
 * bench/smoke.ts) and checks that each wrote its result: a bench that breaks (a renamed
 * function, a child process that no longer says where it listens) fails with one line naming
 * the suite, within a bounded time, instead of rotting unseen until someone runs it.
 *
 * @module
 */

import { assert } from "../assert.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
/** Past this a smoke run counts as hung and is killed (each file's took 2 to 5 minutes here). */
const LIMIT_MS = 20 * 60_000;

/** Runs `suites` in one smoke run and checks each one's result file. */
export async function runSmoke(suites: string[]): Promise<void> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--expose-gc", "bench/run.ts", ...suites, "--smoke"],
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
    for (const suite of suites) {
      const result = JSON.parse(await Deno.readTextFile(`${dir}${suite}.json`));
      assert.equal(result.benchmark, suite);
      assert.equal(result.smoke, true, `${suite}: a smoke result says so`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
