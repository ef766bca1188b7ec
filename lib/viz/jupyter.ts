/**
 * Showing figures in the Deno Jupyter kernel. A figure goes out as
 * `application/vnd.plotly.v1+json` (drawn by JupyterLab, VS Code and nteract) with a short
 * `text/plain` fallback for frontends that cannot draw it.
 *
 * @module
 */

import type { PlotlyFigure } from "./figures.ts";

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
}

/** Displays Markdown (e.g. a transcriptMarkdown transcript) in a notebook cell. */
export async function showMarkdown(markdown: string): Promise<void> {
  if (!("jupyter" in Deno)) {
    throw new Error("showMarkdown runs only inside the Deno Jupyter kernel");
  }
  await Deno.jupyter.display({ "text/markdown": markdown, "text/plain": markdown }, { raw: true });
}
