import { join } from "node:path";
import { assert } from "../assert.ts";
import { recordFailure } from "../../lib/local/runtime/failures.ts";

/** Runs a script as a user does, on its own local backend home, and collects its output. */
async function run(script: string, args: string[], home: string) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(`../../scripts/${script}`, import.meta.url).pathname, ...args],
    env: { TINKERBENCH_HOME: home, TINKER_API_KEY: "", NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** The error is one `error: …` line and nothing looks like a stack frame. */
function assertOneLine(out: { stdout: string; stderr: string }, pattern: RegExp): void {
  const lines = out.stderr.split("\n").filter((l) => l.trim() !== "");
  assert.equal(lines.length, 1, `one line on stderr, got:\n${out.stderr}`);
  assert.match(lines[0], pattern);
  assert.doesNotMatch(out.stdout + out.stderr, /^\s*at /m, "no stack frame");
}

Deno.test("train script: an unserved model is one line and exit 2", async () => {
  const out = await run("train.ts", ["--model-name", "Qwen/Qwen3-8B"], await Deno.makeTempDir());
  assert.equal(out.code, 2);
  assertOneLine(out, /^error: .*does not serve "Qwen\/Qwen3-8B".*TINKER_API_KEY/);
});

Deno.test("train script: a missing config file is one line and exit 2", async () => {
  const out = await run("train.ts", ["--config-path", "/nonexistent/run.yaml"], "/tmp");
  assert.equal(out.code, 2);
  assert.match(out.stderr, /^error: .*\/nonexistent\/run\.yaml/);
  assert.doesNotMatch(out.stderr, /^\s*at /m, "no stack frame");
});

Deno.test("train script: a backend failure is one line naming the backend's log", async () => {
  const home = await Deno.makeTempDir();
  const logDir = join(await Deno.makeTempDir(), "run");
  const args = [
    "--model-name=local/tiny",
    "--batch-size=1",
    "--group-size=2",
    "--max-tokens=8",
    `--log-path=${logDir}`,
  ];
  const first = await run("train.ts", [...args, "--max-steps=1"], home);
  assert.equal(first.code, 0, first.stderr);
  // Damage every saved tensor file, as a full disk or a crash mid-write would.
  for await (const f of walk(home)) {
    if (f.endsWith(".safetensors")) await Deno.writeTextFile(f, "not safetensors");
  }
  const resumed = await run("train.ts", [...args, "--max-steps=2"], home);
  assert.equal(resumed.code, 1);
  const log = join(home, "backend.log");
  assertOneLine(
    resumed,
    new RegExp(`^error: .*the local backend failed: .*\\(details in ${log}\\)`),
  );
  assert.match(await Deno.readTextFile(log), /failed: .*\n\s+at /, "the log keeps the stack");
});

Deno.test("report and sft scripts: user mistakes are one line too", async () => {
  const report = await run("report.ts", ["/nonexistent-run"], "/tmp");
  assert.equal(report.code, 2);
  assert.match(report.stderr, /^error: \/nonexistent-run has no metrics.jsonl/);
  assert.doesNotMatch(report.stderr, /^\s*at /m);
  const sft = await run("sft.ts", ["--steps", "-3"], "/tmp");
  assert.equal(sft.code, 2);
  assert.match(sft.stderr, /^error: /);
  assert.doesNotMatch(sft.stderr, /^\s*at /m);
});

Deno.test("out of memory names the settings to lower and the log", async () => {
  const log = join(await Deno.makeTempDir(), "backend.log");
  const line = recordFailure(log, new RangeError("Allocation exceeds the 4 GiB memory32 limit"));
  assert.match(line, /^out of memory: .*--max-concurrency.*--prefix-cache-mb.*details in /);
  assert.doesNotMatch(line, /\n/);
  assert.match(await Deno.readTextFile(log), /RangeError: Allocation exceeds/);
});

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) yield* walk(p);
    else yield p;
  }
}
