import { assert } from "../assert.ts";
import {
  configHelp,
  configMarkdown,
  listConfigFields,
  listConfigSections,
  loadTrainConfig,
} from "../../lib/config/mod.ts";

const DOC = new URL("../../docs/config.md", import.meta.url);

/** Markdown up to `deno fmt`'s table alignment and line wrapping. */
const normalize = (md: string) => md.replace(/\s+/g, " ").replace(/-{3,}/g, "---");

Deno.test("describe: every field has a type, a default and a one-line description", () => {
  const fields = listConfigFields();
  assert.ok(fields.length >= 40, `${fields.length} fields`);
  for (const f of fields) {
    assert.ok(f.description.length > 10 && !f.description.includes("\n"), f.path);
    assert.ok(f.type.length > 0 && f.default !== undefined, f.path);
  }
  const names = listConfigSections().map((s) => s.name);
  assert.deepEqual(names, [
    "policy",
    "optimizer",
    "rollout",
    "advantages",
    "scoring",
    "judge",
    "teacher",
    "logging",
    "eval",
    "checkpoints",
    "pipeline",
    "proxy",
    "environments",
    "secrets",
  ]);
});

Deno.test("describe: --help text lists every section and field with its alias flags", () => {
  const help = configHelp();
  for (const s of listConfigSections()) assert.match(help, new RegExp(`^${s.name}: `, "m"));
  for (const f of listConfigFields()) assert.ok(help.includes(`  ${f.path} = `), f.path);
  assert.match(help, /rollout.group_size = 4 \(integer in \[1, 1024\]; --group-size\)/);
  assert.match(help, /--use-rebn \(true → discounted_rebn, false → discounted\)/);
});

Deno.test("describe: docs/config.md holds the generated tables, and its YAML examples load", async () => {
  const doc = await Deno.readTextFile(DOC);
  assert.ok(
    normalize(doc).includes(normalize(configMarkdown())),
    "docs/config.md is out of date: regenerate its tables with configMarkdown()",
  );
  const examples = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.ok(examples.length >= 2);
  for (const text of examples) {
    const cfg = await loadTrainConfig({ file: { path: "example.yaml", text } });
    assert.ok(cfg.max_steps > 0);
  }
});
