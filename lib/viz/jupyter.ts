/**
 * Showing figures in the Deno Jupyter kernel. A figure goes out as
 * `application/vnd.plotly.v1+json` (drawn by JupyterLab, VS Code and nteract) with a short
 * `text/plain` fallback for frontends that cannot draw it.
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

/** The display bundle of a figure. */
export function plotlyBundle(fig: PlotlyFigure): Record<string, unknown> {
  const title = (fig.layout.title as { text?: string } | undefined)?.text ?? "figure";
  const traces = fig.data.map((t) => t.type).join(", ");
  return {
    "application/vnd.plotly.v1+json": fig,
    "text/plain": `Plotly figure "${title}" (${fig.data.length} traces: ${traces})`,
  };
}

/** Displays a figure in a notebook cell (only inside the Deno kernel, where `Deno.jupyter` exists). */
export async function showFigure(fig: PlotlyFigure): Promise<void> {
  if (!("jupyter" in Deno)) throw new Error("showFigure runs only inside the Deno Jupyter kernel");
  await Deno.jupyter.display(plotlyBundle(fig), { raw: true });
  await settle();
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
