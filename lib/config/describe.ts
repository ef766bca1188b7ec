/**
 * The settings as text: the `--help` of `deno task train` and the tables of docs/config.md
 * (a test keeps the doc equal to {@link configMarkdown}).
 *
 * @module
 */

import { CONFIG_ALIASES, CONFIG_ENV_ALIASES, type ConfigAlias } from "./aliases.ts";
import { type ConfigField, listConfigFields, listConfigSections } from "./fields.ts";

const shown = (v: unknown) => JSON.stringify(v);

function bySection(): Array<{ name: string; description: string; fields: ConfigField[] }> {
  const fields = listConfigFields();
  const top = fields.filter((f) => !f.path.includes("."));
  return [
    { name: "", description: "top level", fields: top },
    ...listConfigSections().map((s) => ({
      ...s,
      fields: fields.filter((f) => f.path.startsWith(`${s.name}.`)),
    })),
  ];
}

/**
 * Every setting by section, one line each: path, default, type, alias flags, description.
 *
 * @example
 * console.log(configHelp()); // "policy: The policy being trained\n  policy.model = ..."
 */
export function configHelp(): string {
  return bySection().map((s) => {
    const head = s.name ? `${s.name}: ${s.description}` : s.description;
    const lines = s.fields.map((f) => {
      const also = f.flags.slice(1).map((flag) => {
        const rule = CONFIG_ALIASES[flag.slice(2).replaceAll("-", "_")]?.value?.rule;
        return rule ? `${flag} (${rule})` : flag;
      });
      const flags = also.length ? `; ${also.join(", ")}` : "";
      return `  ${f.path} = ${shown(f.default)} (${f.type}${flags})  ${f.description}`;
    });
    return [head, ...lines].join("\n");
  }).join("\n");
}

const cell = (s: string) => s.replaceAll("|", "\\|");
const code = (s: string) => `\`${s}\``;

/** What an alias does to its value, when not only naming the setting. */
function aliasRule(a: ConfigAlias): string {
  if (a.value) return a.value.rule;
  if (!a.lowest) return "";
  return `given beside another name of this setting: the lower${
    a.nullIsUnset ? "; null: unset" : ""
  }`;
}

/** The docs' tables: one per section, the alias table and OpenClaw's environment variables. */
export function configMarkdown(): string {
  const out: string[] = [];
  for (const s of bySection()) {
    out.push(`### ${s.name ? code(s.name) : "Top level"}`, "");
    if (s.name) out.push(`${s.description}.`, "");
    out.push(
      "| field | type | default | aliases | description |",
      "| --- | --- | --- | --- | --- |",
    );
    for (const f of s.fields) {
      const aliases = f.aliases.map(code).join(", ");
      out.push(
        `| ${code(f.path)} | ${cell(f.type)} | ${code(shown(f.default))} | ${aliases} | ${
          cell(f.description)
        } |`,
      );
    }
    out.push("");
  }
  out.push("### Aliases", "", "| name | path | used by | values |", "| --- | --- | --- | --- |");
  for (const [name, a] of Object.entries(CONFIG_ALIASES)) {
    out.push(
      `| ${code(name)} | ${code(a.path)} | ${a.from.join(", ")} | ${cell(aliasRule(a))} |`,
    );
  }
  out.push("", "### OpenClaw's environment variables", "", "| variable | alias |", "| --- | --- |");
  for (const [variable, alias] of Object.entries(CONFIG_ENV_ALIASES)) {
    out.push(`| ${code(variable)} | ${code(alias)} |`);
  }
  return out.join("\n") + "\n";
}
