/**
 * Self-contained HTML reports of Plotly figures: plotly.js is inlined from the installed
 * `plotly.js-dist-min` package, so a report opens offline and can be archived with a run.
 *
 * @module
 */

import { createRequire } from "node:module";
import type { PlotlyFigure } from "./figures.ts";

/**
 * The plotly.js bundles installed: `full` (every trace type, about 4.8 MB; notebooks) and
 * `basic` (scatter, bar and pie, about 1.2 MB; the run viewer, which draws nothing else).
 */
const BUNDLES = {
  full: { pkg: "plotly.js-dist-min", file: "plotly.min.js" },
  basic: { pkg: "plotly.js-basic-dist-min", file: "plotly-basic.min.js" },
} as const;

/** A plotly.js bundle's name. */
export type PlotlyBundle = keyof typeof BUNDLES;

const cached = new Map<PlotlyBundle, string>();

/** A plotly.js bundle's source, from node_modules (after `deno install`). */
export function plotlyJsSource(bundle: PlotlyBundle = "full"): string {
  const hit = cached.get(bundle);
  if (hit !== undefined) return hit;
  const { pkg, file } = BUNDLES[bundle];
  const candidates: string[] = [];
  try {
    candidates.push(createRequire(import.meta.url).resolve(pkg));
  } catch { /* not resolvable this way; try the project's node_modules */ }
  candidates.push(new URL(`../../node_modules/${pkg}/${file}`, import.meta.url).pathname);
  for (const path of candidates) {
    try {
      const text = Deno.readTextFileSync(path);
      cached.set(bundle, text);
      return text;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
  }
  throw new Error(
    `${file} not found (looked at ${candidates.join(", ")}); run \`deno install\``,
  );
}

/** JSON for inside a `<script>` element: "<" escaped so no string can close the element. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c");
}

/** A `<script>` element defining `window.Plotly` from the inlined bundle (about 4.8 MB). */
export function plotlyScriptTag(): string {
  return `<script>${plotlyJsSource().replace(/<\/script/gi, "<\\/script")}</script>`;
}

/** Options of {@link figuresToHtml}. */
export interface FiguresHtmlOptions {
  /** Lines of text shown under the heading, before the figures (e.g. a run's summary). */
  notes?: string[];
}

/**
 * An HTML page with a heading, optional notes and every figure, plotly.js inlined (about
 * 4.8 MB), so the page needs no network.
 */
export function figuresToHtml(
  title: string,
  figs: PlotlyFigure[],
  { notes = [] }: FiguresHtmlOptions = {},
): string {
  const esc = (s: string) =>
    s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  const json = scriptJson;
  const divs = figs.map((_, i) => `<div id="fig${i}" class="fig"></div>`).join("\n");
  const plots = figs.map((f, i) =>
    `Plotly.newPlot("fig${i}", ${json(f.data)}, ${json(f.layout)}, {responsive: true});`
  ).join("\n");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${esc(title)}</title>
<style>body { font-family: sans-serif; margin: 1em 2em; } .fig { margin-bottom: 1em; }</style>
${plotlyScriptTag()}
</head>
<body>
<h1>${esc(title)}</h1>
${notes.map((n) => `<p class="note">${esc(n)}</p>`).join("\n")}
${divs}
<script>
${plots}
</script>
</body>
</html>
`;
}

/** Writes {@link figuresToHtml}'s page to `path` and returns the path. */
export async function writeFiguresHtml(
  path: string,
  title: string,
  figs: PlotlyFigure[],
  options: FiguresHtmlOptions = {},
): Promise<string> {
  await Deno.writeTextFile(path, figuresToHtml(title, figs, options));
  return path;
}
