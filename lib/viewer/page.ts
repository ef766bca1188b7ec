/**
 * The run viewer's page: a static HTML file with the data embedded as JSON, drawn by one
 * script of ours (`viewer.js`) and plotly.js. Neither script is copied into the page: both are
 * written once into an assets folder (`.viewer/` in the runs root for a run's report, beside
 * the file otherwise) and referenced relatively, so the page opens offline from `file://` and a
 * report costs its data, not plotly.js each (the basic bundle, 1.2 MB: the viewer draws only
 * lines and bars).
 *
 * @module
 */

import { dirname, join, relative } from "node:path";
import { plotlyJsSource, scriptJson } from "../viz/mod.ts";
import { browserLibSource } from "./bundle.ts";
import type { ViewerData } from "./data.ts";

/** The assets folder's name. */
export const ASSETS_DIR = ".viewer";

/** The browser script of the viewer. */
export function viewerJsSource(): string {
  return Deno.readTextFileSync(new URL("./viewer.js", import.meta.url));
}

/** The page's stylesheet (inlined: it is small). */
const STYLE = `
body { font-family: system-ui, sans-serif; margin: 1em 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.5em; }
.note { color: #555; margin: 0.2em 0; }
#charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 0.5em; }
.chart { height: 360px; }
#tabs { position: sticky; top: 0; z-index: 2; background: #fff; padding: 0.3em 0; border-bottom: 1px solid #ccc; margin-bottom: 0.6em; }
.tab { font-size: 1em; padding: 0.3em 1em; border: 1px solid #ccc; border-bottom: none; background: #f4f4f4; border-radius: 4px 4px 0 0; cursor: pointer; }
.tab.active { background: #fff; font-weight: bold; border-color: #888; }
a.link { color: #246; font-size: 0.85em; } button.copy-link { font-size: 0.7em; vertical-align: middle; }
#live { position: fixed; top: 0.5em; right: 1em; background: #e8f4e8; padding: 0.2em 0.6em; border-radius: 4px; }
#filters { display: flex; flex-wrap: wrap; gap: 0.6em; align-items: end; margin-bottom: 0.5em; }
#filters label { display: flex; flex-direction: column; font-size: 0.8em; color: #444; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { padding: 0.15em 0.5em; border-bottom: 1px solid #eee; text-align: left; }
#episodes-table tbody tr { cursor: pointer; } #episodes-table tbody tr:hover { background: #f0f4ff; }
tr.selected { background: #dde6ff !important; }
#table-wrap { max-height: 22em; overflow: auto; border: 1px solid #ddd; }
#panes { display: flex; gap: 1em; margin-top: 1em; align-items: flex-start; }
.pane { flex: 1; min-width: 0; border: 1px solid #ccc; border-radius: 4px; padding: 0.5em 0.8em; }
.msg { margin: 0.3em 0; padding: 0.3em 0.5em; border-left: 3px solid #bbb; white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: 0.85em; }
.msg.user, .msg.system { border-color: #6a8; } .msg.tool { border-color: #c93; } .msg.assistant { border-color: #57c; }
.role { font-weight: bold; font-family: system-ui, sans-serif; font-size: 0.8em; color: #555; }
.tokens { white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: 0.85em; line-height: 1.6; }
.tok { border-radius: 2px; box-shadow: inset -1px 0 rgba(255,255,255,0.8); } .tok.untrained { color: #999; }
.meta { font-size: 0.8em; color: #555; }
.bad { color: #b00; } .good { color: #070; } .excluded { color: #a60; }
.turn { border-top: 1px dashed #ccc; margin-top: 0.5em; padding-top: 0.3em; }
.why p { margin: 0.2em 0; }
details.whatif { border: 1px solid #cdd; border-radius: 4px; padding: 0.3em 0.6em; margin: 0.5em 0; background: #fafcff; }
details.whatif summary { cursor: pointer; font-weight: bold; }
.whatif-form { display: flex; flex-wrap: wrap; gap: 0.6em; align-items: end; margin: 0.4em 0; }
.whatif-form label { display: flex; flex-direction: column; font-size: 0.8em; color: #444; }
.whatif-form input { width: 6em; }
.wi-turn { border-top: 1px dashed #ccc; margin-top: 0.4em; }
.whatif-tokens .role { display: inline-block; width: 7em; white-space: nowrap; }
.legend-bar { display: inline-block; width: 9em; height: 0.8em; vertical-align: middle;
  background: linear-gradient(to right, rgb(178,24,43), #fff, rgb(33,102,172)); }
`;

/**
 * The page of `data`, loading plotly.js and viewer.js from `assets` (a relative URL or path).
 */
export function viewerHtml(data: ViewerData, assets: string): string {
  const at = escape(assets.replace(/\/$/, ""));
  return page(
    data,
    `<script src="${at}/plotly.min.js"></script>\n<script src="${at}/${LIB_JS}"></script>`,
    { viewerJs: `<script src="${at}/viewer.js"></script>` },
  );
}

/** The library bundled for the browser (./bundle.ts), in the assets folder. */
export const LIB_JS = "tinkerbench.js";

/**
 * The viewer of `data` as an `<iframe>` whose page carries viewer.js itself and no plotly.js,
 * for a notebook's output: episodes only (the data should have no figures), nothing to load.
 */
export function viewerEmbedHtml(
  data: ViewerData,
  { height = 720 }: { height?: number } = {},
): string {
  if (data.figures.length) throw new Error("viewerEmbedHtml: draws episodes only; give no figures");
  const js = viewerJsSource().replace(/<\/script/gi, "<\\/script");
  const doc = page(data, "", { viewerJs: `<script>${js}</script>` });
  return `<iframe class="tinkerbench-viewer" style="width: 100%; height: ${height}px; border: 1px solid #ccc" srcdoc="${
    escape(doc)
  }"></iframe>`;
}

function escape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(
    /"/g,
    "&quot;",
  );
}

function page(data: ViewerData, head: string, { viewerJs }: { viewerJs: string }): string {
  const esc = escape;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${esc(data.title)}</title>
<style>${STYLE}</style>
${head}
</head>
<body>
<h1 id="title">${esc(data.title)}</h1>
<div id="notes">${data.notes.map((n) => `<p class="note">${esc(n)}</p>`).join("\n")}</div>
<nav id="tabs"></nav>
<section id="sec-charts" hidden><div id="charts"></div></section>
<section id="sec-episodes">
<div id="filters"></div>
<div id="table-wrap"></div>
<div id="panes"></div>
</section>
<script id="tb-data" type="application/json">${scriptJson(data)}</script>
${viewerJs}
<noscript>The viewer needs JavaScript.</noscript>
</body>
</html>
`;
}

/**
 * Writes the assets (plotly.js, viewer.js and the library bundled for the browser) into
 * `assetsDir`, rewriting a file only when it changed, and returns the assets' paths. When the
 * library cannot be bundled, the page works without the why and what-if parts, and the reason
 * is returned in `notes`.
 */
export async function writeViewerAssets(
  assetsDir: string,
  notes: string[] = [],
): Promise<string[]> {
  await Deno.mkdir(assetsDir, { recursive: true });
  const files: Record<string, string> = {
    "plotly.min.js": plotlyJsSource("basic"),
    "viewer.js": viewerJsSource(),
  };
  try {
    files[LIB_JS] = await browserLibSource();
  } catch (e) {
    notes.push(`why nothing trained and what-if are not on this page: ${(e as Error).message}`);
  }
  return await Promise.all(
    Object.entries(files).map(async ([name, text]) => {
      const path = join(assetsDir, name);
      const old = await Deno.readTextFile(path).catch(() => null);
      if (old !== text) await Deno.writeTextFile(path, text);
      return path;
    }),
  );
}

/** Writes the page of `data` to `out`, its assets into `assetsDir`; returns `out`. */
export async function writeViewer(
  out: string,
  data: ViewerData,
  assetsDir: string,
): Promise<string> {
  const notes: string[] = [];
  await writeViewerAssets(assetsDir, notes);
  if (notes.length) data = { ...data, notes: [...data.notes, ...notes] };
  const rel = relative(dirname(out), assetsDir).split("\\").join("/") || ".";
  await Deno.writeTextFile(out, viewerHtml(data, rel));
  return out;
}
