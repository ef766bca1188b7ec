/**
 * The model table as the README's supported-models table (`deno task models --markdown`), so
 * the README is generated from the table and a test holds them equal.
 *
 * @module
 */

import { type ModelInfo, MODELS } from "./table.ts";

/** Where a model's tokenizer comes from, in words that do not depend on this machine. */
export function tokenizerSource(m: ModelInfo): string {
  if (m.noTokenizer) return "none here";
  if (m.npmTokenizer) return `npm \`${m.npmTokenizer}\``;
  return "its Hugging Face files (`deno task models fetch`)";
}

function renderers(m: ModelInfo): string {
  const on = `\`${m.renderer}\``;
  return m.noThinkingRenderer ? `${on} / \`${m.noThinkingRenderer}\`` : on;
}

/**
 * The table in Markdown: one row per model, live ones first, with the renderer (thinking on /
 * off for hybrid models), context length, default learning rate, images and tokenizer.
 *
 * @example
 * console.log(modelsMarkdown());
 */
export function modelsMarkdown(models: readonly ModelInfo[] = MODELS): string {
  const head = ["model", "status", "renderer (thinking / off)", "context", "default LR", "images"];
  const rows = models.map((m) => [
    `\`${m.name}\``,
    m.status,
    renderers(m),
    String(m.contextLength ?? "—"),
    m.lr.toExponential(),
    m.vision ? "yes" : "no",
    tokenizerSource(m),
  ]);
  return padTable([[...head, "tokenizer"], ...rows]);
}

/** Rows as a Markdown table padded as `deno fmt` pads one, so the README stays formatted. */
function padTable(rows: string[][]): string {
  const width = rows[0].map((_, c) => Math.max(3, ...rows.map((r) => [...r[c]].length)));
  const line = (r: string[]) =>
    `| ${r.map((cell, c) => cell + " ".repeat(width[c] - [...cell].length)).join(" | ")} |`;
  return [line(rows[0]), line(width.map((w) => "-".repeat(w))), ...rows.slice(1).map(line)]
    .join("\n");
}
