/**
 * Docs that cannot drift: where README.md or docs/*.md quote a default, a task, a file, a count
 * or a list the code owns, the quote is checked against the code.
 */

import { join } from "node:path";
import { assert } from "./assert.ts";
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

Deno.test("docs: the README's served models are the local backend's", async () => {
  const readme = (await docs()).get("README.md")!;
  const bullet = /- \*\*Models served\*\*[\s\S]*?(?=\n- \*\*)/.exec(readme)?.[0] ?? "";
  const named = [...new Set([...bullet.matchAll(/`(local\/[a-z0-9]+)`/g)].map((m) => m[1]))];
  assert.deepEqual(named.sort(), localModelNames().sort());
});

Deno.test("docs: the README's layout table names every lib/ folder and script, one cell each", async () => {
  const readme = (await docs()).get("README.md")!;
  const table = /## Layout\n\n((?:\|.*\n)+)/.exec(readme)?.[1] ?? "";
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
