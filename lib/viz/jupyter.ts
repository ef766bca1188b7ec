/**
 * Showing figures in the Deno Jupyter kernel. A figure goes out as
 * `application/vnd.plotly.v1+json` (drawn by JupyterLab, VS Code and nteract), as `text/html`
 * that draws it with plotly.js (what nbconvert's HTML export, classic Jupyter and JupyterLab
 * without a Plotly renderer show), and as a short `text/plain` line for text-only frontends.
 * The HTML works offline: the first figure of a kernel session carries plotly.js itself
 * (about 4.8 MB, once per notebook, as plotly.py's offline mode does), and later figures draw
 * with it, so an exported notebook needs the cells run from the top (`nbconvert --execute`,
 * "Restart & run all").
 *
 * Notebooks show frames with {@link showFrame} rather than as a cell's last expression, and
 * every helper here waits a moment after displaying: with the local backend's server running
 * in the kernel, the Deno kernel (2.9) now and then reports a cell finished before its
 * outputs went out, and nbconvert then drops them (seen for `execute_result`s and for
 * `display_data`; about one cell in 70 without the wait, none in 216 with it).
 *
 * @module
 */

import type { PlotlyFigure } from "./figures.ts";
import type { DataFrame } from "./frames.ts";
import { plotlyScriptTag, scriptJson } from "./html.ts";

/** Options of {@link plotlyBundle}. */
export interface PlotlyBundleOptions {
  /** Put plotly.js itself into the HTML (the first figure of a notebook does). */
  includePlotlyJs?: boolean;
  /** Id of the figure's `<div>` (default: a random one). */
  divId?: string;
}

/**
 * The HTML of a figure: a `<div>` and a script that draws into it once `window.Plotly` exists
 * (waiting up to 10 s for an earlier output's plotly.js, then saying what is missing).
 */
export function plotlyHtml(
  fig: PlotlyFigure,
  { includePlotlyJs = false, divId = `tb-plotly-${crypto.randomUUID()}` }: PlotlyBundleOptions = {},
): string {
  const id = scriptJson(divId);
  return `<div id=${id} class="tinkerbench-plotly" style="min-height: 450px"></div>
${includePlotlyJs ? plotlyScriptTag() : ""}
<script>
(function () {
  var tries = 0;
  function draw() {
    var el = document.getElementById(${id});
    if (window.Plotly && el) {
      window.Plotly.newPlot(el, ${scriptJson(fig.data)}, ${
    scriptJson(fig.layout)
  }, { responsive: true });
    } else if (++tries < 200) {
      setTimeout(draw, 50);
    } else if (el) {
      el.textContent = "plotly.js is not loaded: run the notebook from the top (its first figure carries plotly.js)";
    }
  }
  draw();
})();
</script>`;
}

/** The display bundle of a figure: Plotly's JSON, HTML drawing it, and a line of text. */
export function plotlyBundle(
  fig: PlotlyFigure,
  options: PlotlyBundleOptions = {},
): Record<string, unknown> {
  const title = (fig.layout.title as { text?: string } | undefined)?.text ?? "figure";
  const traces = fig.data.map((t) => t.type).join(", ");
  return {
    "application/vnd.plotly.v1+json": fig,
    "text/html": plotlyHtml(fig, options),
    "text/plain": `Plotly figure "${title}" (${fig.data.length} traces: ${traces})`,
  };
}

/** Whether this kernel session has already sent plotly.js (with its first figure). */
let plotlyJsSent = false;

/** Displays a figure in a notebook cell (only inside the Deno kernel, where `Deno.jupyter` exists). */
export async function showFigure(fig: PlotlyFigure): Promise<void> {
  if (!("jupyter" in Deno)) throw new Error("showFigure runs only inside the Deno Jupyter kernel");
  const includePlotlyJs = !plotlyJsSent;
  await Deno.jupyter.display(plotlyBundle(fig, { includePlotlyJs }), { raw: true });
  plotlyJsSent = true;
  // 4.8 MB take longer to go out than a figure's JSON: 30 ms lost it in one run of four.
  await settle(includePlotlyJs ? 1000 : 30);
}

/** Displays Markdown (e.g. a transcriptMarkdown transcript) in a notebook cell. */
export async function showMarkdown(markdown: string): Promise<void> {
  if (!("jupyter" in Deno)) {
    throw new Error("showMarkdown runs only inside the Deno Jupyter kernel");
  }
  await Deno.jupyter.display({ "text/markdown": markdown, "text/plain": markdown }, { raw: true });
  await settle();
}

/**
 * Displays a Polars frame as an HTML table (with a text fallback), at most `maxRows` rows
 * (default 50), saying how many were left out.
 */
export async function showFrame(df: DataFrame, { maxRows = 50 }: { maxRows?: number } = {}) {
  if (!("jupyter" in Deno)) throw new Error("showFrame runs only inside the Deno Jupyter kernel");
  const shown = df.head(maxRows);
  const more = df.height > maxRows
    ? `<p>… ${df.height - maxRows} more rows (${df.height} in all)</p>`
    : "";
  await Deno.jupyter.display({
    "text/html": shown.toHTML() + more,
    "text/plain": shown.toString(),
  }, { raw: true });
  await settle();
}

/** Lets the kernel send what was displayed before the cell can finish (see the module doc). */
function settle(ms = 30): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
