/**
 * JSR's checks on the library's exports (deno.json's exports map), so they cannot regress:
 *
 * - no slow types and `import type` where only types are imported (`deno lint`'s
 *   `no-slow-types` and `verbatim-module-syntax`), everywhere but the few diagnostics listed in
 *   {@link KNOWN_LINT}: files other work is rewriting this round. deno.json excludes the two
 *   rules until that list is empty; then this test asks for the exclusion to go.
 * - `deno doc --lint` (JSDoc on every export, explicit types, no public type that references a
 *   private one): no file of the exports' graph has more problems than tests/package/
 *   doc_lint_known.json records for it. Fixing problems lowers a count; rewrite the file with
 *   `TB_DOC_LINT_WRITE=1 deno test -A tests/package/doc_lint_test.ts`.
 *
 * A reference to another package's type (zod's `ZodObject` or `output`, Hono, polars'
 * `DataFrame`) is not counted: Deno 2.9.6's `deno doc --lint` calls those private, which is its
 * bug (denoland/deno#27364, fixed upstream by denoland/deno#34339).
 */

import { assert } from "../assert.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const DENO = Deno.execPath();
const BASELINE = new URL("./doc_lint_known.json", import.meta.url);

/**
 * `deno lint` diagnostics of the two rules still to mend after this round's merge, as
 * `path:line code`, each in a file another developer rewrites now (the integrator adds the
 * type or the `type` keyword after merging, then empties this list and drops the rules'
 * exclusion from deno.json).
 */
const KNOWN_LINT: string[] = [];

async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(DENO, { args, cwd: ROOT, stdout: "piped", stderr: "piped" })
    .output();
  const d = new TextDecoder();
  return { code: out.code, stdout: d.decode(out.stdout), stderr: d.decode(out.stderr) };
}

Deno.test("package: no slow types and only type imports for types, but the known few", async () => {
  const out = await run([
    "lint",
    "--json",
    "--rules-include=no-slow-types,verbatim-module-syntax",
    "--rules-exclude=",
  ]);
  const report = JSON.parse(out.stdout) as {
    diagnostics: { filename: string; range: { start: { line: number } }; code: string }[];
  };
  const found = report.diagnostics.map((d) =>
    `${d.filename.replace(`file://${ROOT}`, "")}:${d.range.start.line} ${d.code}`
  ).sort();
  assert.deepEqual(found, KNOWN_LINT, "new slow types or value imports used only as types");
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
  const excluded: string[] = config.lint?.rules?.exclude ?? [];
  if (KNOWN_LINT.length === 0) {
    assert.deepEqual(excluded, [], "nothing left to mend: deno.json should lint with every rule");
  }
});

/** The exports' `deno doc --lint` problems per file, other packages' types not counted. */
async function docLintCounts(): Promise<Record<string, number>> {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
  const entries = Object.values(config.exports as Record<string, string>);
  const out = await run(["doc", "--lint", ...entries]);
  // deno doc colours its report; the text is what is read.
  // deno-lint-ignore no-control-regex
  const text = (out.stdout + out.stderr).replace(/\x1b\[[0-9;]*m/g, "");
  const local = await localTypeNames();
  const counts: Record<string, number> = {};
  for (const block of text.split(/\n(?=error\[)/)) {
    const head = block.match(/^error\[([a-z-]+)\]/);
    const at = block.match(/--> (\S+?):\d+:\d+/);
    if (!head || !at) continue;
    const ref = block.match(/references private type '([^']+)'/)?.[1];
    if (head[1] === "private-type-ref" && ref && !local.has(ref)) continue;
    const file = at[1].replace(ROOT, "");
    counts[file] = (counts[file] ?? 0) + 1;
  }
  return counts;
}

/** Names declared in lib/ (a private type of ours, as opposed to another package's). */
async function localTypeNames(): Promise<Set<string>> {
  const names = new Set<string>();
  const pattern =
    /^(?:export )?(?:declare )?(?:type|interface|class|const|enum) ([A-Za-z_$][\w$]*)/gm;
  async function walk(dir: string): Promise<void> {
    for await (const e of Deno.readDir(dir)) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(path);
      else if (e.name.endsWith(".ts")) {
        for (const m of (await Deno.readTextFile(path)).matchAll(pattern)) names.add(m[1]);
      }
    }
  }
  await walk(`${ROOT}lib`);
  return names;
}

Deno.test("package: deno doc --lint on the exports has no more problems than recorded", async () => {
  const counts = await docLintCounts();
  if (Deno.env.get("TB_DOC_LINT_WRITE")) {
    const sorted = Object.fromEntries(
      Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)),
    );
    await Deno.writeTextFile(BASELINE, JSON.stringify(sorted, null, 2) + "\n");
  }
  const known = JSON.parse(await Deno.readTextFile(BASELINE)) as Record<string, number>;
  const worse = Object.entries(counts).filter(([f, n]) => n > (known[f] ?? 0)).map(([f, n]) =>
    `${f}: ${n} problems, ${known[f] ?? 0} recorded (run deno doc --lint on deno.json's exports)`
  );
  assert.deepEqual(worse, []);
});
