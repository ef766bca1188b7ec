/**
 * Docs that cannot drift: where README.md or docs/*.md quote a default, a task, a file, a count
 * or a list the code owns, the quote is checked against the code.
 */

import { existsSync } from "node:fs";
import { join } from "node:path";
import { assert } from "./assert.ts";
import { RESULTS_PAGE, resultsPage } from "../scripts/results_doc.ts";
import { resolveLearningRate, TrainConfigSchema } from "../lib/config/schema.ts";
import { localModelNames } from "../lib/local/models.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const NUMBER_WORDS = [
  "zero",
  "one",
  "two",
  "three",
  "four",
  "five",
  "six",
  "seven",
  "eight",
  "nine",
  "ten",
];

/** README.md and every docs/*.md, by path. */
async function docs(): Promise<Map<string, string>> {
  const out = new Map([["README.md", await Deno.readTextFile(join(ROOT, "README.md"))]]);
  for await (const e of Deno.readDir(join(ROOT, "docs"))) {
    if (e.name.endsWith(".md")) {
      out.set(`docs/${e.name}`, await Deno.readTextFile(join(ROOT, "docs", e.name)));
    }
  }
  return out;
}

/** Every match of `re` (global) in every doc, as `[file, match]`. */
async function quotes(re: RegExp): Promise<[string, RegExpMatchArray][]> {
  return [...await docs()].flatMap(([file, text]) =>
    [...text.matchAll(re)].map((m): [string, RegExpMatchArray] => [file, m])
  );
}

Deno.test("docs: the learning-rate defaults they quote are the code's", async () => {
  const lr = (model: string) => resolveLearningRate(TrainConfigSchema.parse({ policy: { model } }));
  const expected = { local: lr("local/games2"), cloud: lr("Qwen/Qwen3-8B") };
  const found = await quotes(/(\d(?:\.\d+)?e-\d+)\s*(?:\([^)]*\)\s*)?on\s+`?(local|cloud)\b/g);
  assert.ok(found.length >= 4, `the defaults are quoted (${found.length} found)`);
  const wrong = found.filter(([, m]) => Number(m[1]) !== expected[m[2] as "local" | "cloud"])
    .map(([file, m]) =>
      `${file}: "${m[0].replace(/\s+/g, " ")}", the code: ${expected[m[2] as "local"]}`
    );
  assert.deepEqual(wrong, []);
});

Deno.test("docs: every `deno task` they name exists", async () => {
  const tasks = Object.keys(JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))).tasks);
  const missing = (await quotes(/deno task ([a-z][a-z:_-]*)/g))
    .filter(([, m]) => !tasks.includes(m[1]))
    .map(([file, m]) => `${file}: deno task ${m[1]}`);
  assert.deepEqual(missing, []);
});

Deno.test("docs: every file or folder of this repository they quote exists", async () => {
  const re =
    /`((?:lib|scripts|tests|docs|bench|notebooks|examples|configs|models|tools)\/[^`\s*{}<>]*)`/g;
  const missing: string[] = [];
  for (const [file, m] of await quotes(re)) {
    const path = m[1].replace(/:\d+$/, "");
    try {
      await Deno.stat(join(ROOT, path));
    } catch {
      missing.push(`${file}: ${path}`);
    }
  }
  assert.deepEqual(missing, []);
});

Deno.test("docs: the number of notebooks they quote is the number in notebooks/", async () => {
  let count = 0;
  for await (const e of Deno.readDir(join(ROOT, "notebooks"))) {
    if (e.name.endsWith(".ipynb")) count++;
  }
  const words = NUMBER_WORDS.join("|");
  const found = [
    ...await quotes(new RegExp(`\\b(${words})(?: phase-by-phase)? notebooks`, "gi")),
    ...await quotes(new RegExp(`runs all (${words}) headless`, "gi")),
  ];
  assert.ok(found.length >= 2, "the count is quoted");
  const wrong = found.filter(([, m]) => NUMBER_WORDS.indexOf(m[1].toLowerCase()) !== count)
    .map(([file, m]) => `${file}: "${m[0]}", notebooks/ holds ${count}`);
  assert.deepEqual(wrong, []);
});

Deno.test("docs: the served models that docs/local-backend.md lists are the local backend's", async () => {
  const page = (await docs()).get("docs/local-backend.md")!;
  const bullet = /- \*\*Models served\*\*[\s\S]*?(?=\n- \*\*)/.exec(page)?.[0] ?? "";
  const named = [...new Set([...bullet.matchAll(/`(local\/[a-z0-9]+)`/g)].map((m) => m[1]))];
  assert.deepEqual(named.sort(), localModelNames().sort());
});

Deno.test("docs: the index's layout table names every lib/ folder and script, one cell each", async () => {
  const index = (await docs()).get("docs/README.md")!;
  const table = /## Layout\n\n((?:\|.*\n)+)/.exec(index)?.[1] ?? "";
  const rows = table.trim().split("\n");
  const broken = rows.filter((r) => r.split("|").length !== 4);
  assert.deepEqual(broken, [], "every row has a folder and a description (no stray |)");
  const folders = rows.map((r) => r.split("|")[1]).join(" ");
  const scripts = rows.find((r) => r.startsWith("| `scripts/`")) ?? "";
  const missing: string[] = [];
  for await (const e of Deno.readDir(join(ROOT, "lib"))) {
    if (e.isDirectory && !folders.includes(`\`lib/${e.name}/\``)) missing.push(`lib/${e.name}/`);
  }
  for await (const e of Deno.readDir(join(ROOT, "scripts"))) {
    const name = e.name.replace(/\.ts$/, "");
    if (!scripts.includes(`\`${e.name.endsWith(".ts") ? name : e.name}\``)) {
      missing.push(`scripts/${e.name}`);
    }
  }
  assert.deepEqual(missing.sort(), []);
});

Deno.test("docs: docs/results.md is what `deno task results` writes from bench/results/", async () => {
  const committed = await Deno.readTextFile(join(ROOT, RESULTS_PAGE));
  assert.ok(
    committed === await resultsPage(ROOT),
    `${RESULTS_PAGE} is stale: run deno task results`,
  );
});

Deno.test("docs: the README has at most 200 lines", async () => {
  const lines = (await Deno.readTextFile(join(ROOT, "README.md"))).trimEnd().split("\n").length;
  assert.ok(lines <= 200, `README.md has ${lines} lines`);
});

Deno.test("docs: a ```ts file=PATH block is that file, as the repository ships it", async () => {
  const blocks = await quotes(/```ts file=(\S+)\n([\s\S]*?)```/g);
  assert.ok(blocks.length >= 1, "the tutorial's environment is a file block");
  for (const [doc, m] of blocks) {
    const shipped = await Deno.readTextFile(join(ROOT, m[1]));
    assert.ok(shipped === m[2], `${doc}: the block of ${m[1]} differs from the file`);
  }
});

// Runnable commands. A doc marks a block ```sh runnable; each line of it is a command, run here
// from the repository root the way the docs say to: bash, with Deno put on PATH by the README's
// `export PATH=...` line and by nothing else. Two exceptions, so CI stays fast:
// - `deno task train` gets TRAIN_OVERRIDES appended (later flags win) and its own --log-path;
// - `deno task test` is not run from inside the tests: CI runs it, and .ci/run must hold the
//   README's line verbatim (checked below).

/**
 * Appended to every `deno task train` the docs mark runnable: one step of one group, a short
 * evaluation (the command's own flags and environment still run; the sizes are CI's).
 */
const TRAIN_OVERRIDES = ["--max-steps", "1", "--batch-size", "1", "--eval.episodes", "8"];

/** Every runnable command, as `[doc, command]`, its trailing `# comment` removed, in doc order. */
function runnableCommands(): [string, string][] {
  const files = [
    "README.md",
    ...[...Deno.readDirSync(join(ROOT, "docs"))]
      .filter((e) => e.name.endsWith(".md")).map((e) => `docs/${e.name}`).sort(),
  ];
  const out: [string, string][] = [];
  for (const file of files) {
    const text = Deno.readTextFileSync(join(ROOT, file));
    for (const block of text.matchAll(/```sh runnable\n([\s\S]*?)```/g)) {
      for (const line of block[1].split("\n")) {
        const command = line.replace(/\s+#\s.*$/, "").trim();
        if (command && !command.startsWith("#")) out.push([file, command]);
      }
    }
  }
  return out;
}

/** The README's way to put Deno on PATH (the line setup prints). */
function pathLine(): string {
  const readme = Deno.readTextFileSync(join(ROOT, "README.md"));
  const line = /^export PATH="\$PWD\/tools\/node_modules\/\.bin:\$PATH"$/m.exec(readme)?.[0];
  if (!line) throw new Error("README.md has no `export PATH=...` line for Deno");
  return line;
}

/** This process's PATH without any folder that holds a `deno`: the docs must supply it. */
function pathWithoutDeno(): string {
  return (Deno.env.get("PATH") ?? "").split(":")
    .filter((dir) => dir && !existsSync(join(dir, "deno"))).join(":");
}

Deno.test("docs: every shell block of the README is marked runnable", () => {
  const readme = Deno.readTextFileSync(join(ROOT, "README.md"));
  const unmarked = [...readme.matchAll(/```(sh|bash|shell)( [^\n]*)?\n/g)]
    .filter((m) => m[2]?.trim() !== "runnable").map((m) => m[0].trim());
  assert.deepEqual(unmarked, []);
});

Deno.test("docs: CI runs the README's test command", () => {
  const tests = runnableCommands().filter(([f, c]) =>
    f === "README.md" && /deno task test\b/.test(c)
  );
  assert.equal(tests.length, 1, "the README has one test command");
  // .ci/run runs each part of the README's line, in its order (with its own checks between).
  const ci = Deno.readTextFileSync(join(ROOT, ".ci/run"));
  let at = 0;
  for (const part of tests[0][1].split("&&").map((p) => p.trim())) {
    const found = ci.indexOf(part, at);
    assert.ok(found >= 0, `.ci/run does not run \`${part}\` (from the README's test command)`);
    at = found + part.length;
  }
});

const seen = new Set<string>();
for (const [file, command] of runnableCommands()) {
  if (/deno task test\b/.test(command) || seen.has(command)) continue;
  seen.add(command);
  Deno.test(`docs: runs ${file}: ${command.slice(0, 90)}`, async () => {
    const home = await Deno.makeTempDir({ prefix: "docs_run_" });
    const logDir = join(home, "run");
    const run = /deno task train\b/.test(command)
      ? `${command} ${TRAIN_OVERRIDES.join(" ")} --log-path ${logDir}`
      : command;
    const script = command.startsWith("export PATH=")
      ? `${command} && command -v deno`
      : `${pathLine()}\n${run}`;
    const out = await new Deno.Command("bash", {
      args: ["-c", script],
      cwd: ROOT,
      // The embedded backend, whatever keys this shell holds; checkpoints in a throwaway home.
      env: {
        PATH: pathWithoutDeno(),
        NO_COLOR: "1",
        TINKER_API_KEY: "",
        WANDB_API_KEY: "",
        TINKERBENCH_HOME: home,
      },
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(300_000),
    }).output();
    await Deno.remove(home, { recursive: true }).catch(() => {});
    const tail = new TextDecoder().decode(out.stderr).trim().split("\n").slice(-5).join("\n");
    assert.ok(out.success, `\`${run}\` exited ${out.code}:\n${tail}`);
    if (/deno task train\b/.test(command)) {
      const stdout = new TextDecoder().decode(out.stdout);
      assert.ok(/held-out success: base/.test(stdout), `\`${run}\` printed no held-out line`);
      assert.ok(/^step 1: /m.test(stdout), `\`${run}\` did not stop after step 1`);
    }
  });
}

/** Mean words per sentence of a page's prose: code, tables, headings and link targets left out. */
function meanSentenceWords(markdown: string): number {
  const prose = markdown.replace(/```[\s\S]*?```/g, "").split("\n")
    .filter((l) => !/^\s*(\||#|<!--)/.test(l)).join(" ")
    .replace(/`[^`]*`/g, "X").replace(/\[([^\]]*)\]\([^)]*\)/g, "$1");
  const sentences = prose.split(/(?<=[.!?])\s+/).map((s) => s.split(/\s+/).filter(Boolean).length)
    .filter((words) => words > 2);
  return sentences.reduce((a, b) => a + b, 0) / Math.max(1, sentences.length);
}

Deno.test("docs: the README and the newcomer pages keep sentences short (20 words on average at most)", async () => {
  const pages = [
    "README.md",
    "docs/tutorial.md",
    "docs/concepts.md",
    "docs/faq.md",
    "docs/training.md",
  ];
  const all = await docs();
  const long = pages.map((p) => [p, meanSentenceWords(all.get(p) ?? "")] as const)
    .filter(([, mean]) => mean > 20).map(([p, mean]) => `${p}: ${mean.toFixed(1)} words`);
  assert.deepEqual(long, []);
});
