/**
 * A run's report: the run viewer (lib/viewer) written as `report.html` in the run directory,
 * or, for several runs, a comparison page beside them (never inside one of them). The page
 * holds the summary charts and every episode of `rollouts/`; plotly.js and the viewer's script
 * are shared in the runs root's `.viewer/` folder (beside `--out` for another place).
 *
 * @module
 */

import { basename, dirname, join, resolve } from "node:path";
import { loadViewerData } from "./data.ts";
import { runPath } from "../rundir/mod.ts";
import { ASSETS_DIR, writeViewer } from "./page.ts";
import { browserLibSource } from "./bundle.ts";

/** Options of {@link writeRunReport}. */
export interface ReportOptions {
  /** Where to write the page (default: `report.html` in the run, or `comparison-A-vs-B.html` beside the runs). */
  out?: string;
}

/**
 * Writes the viewer of one run directory (`report.html` in it) or a comparison of several,
 * and returns the page's path.
 *
 * @example
 * const path = await writeRunReport(".tinkerbench/runs/rl-demo");
 * const cmp = await writeRunReport(["runs/a", "runs/b"], { out: "a-vs-b.html" });
 */
export async function writeRunReport(
  dirs: string | string[],
  { out }: ReportOptions = {},
): Promise<string> {
  const runDirs = (typeof dirs === "string" ? [dirs] : dirs).map((d) => resolve(d));
  if (runDirs.length === 0) throw new Error("writeRunReport: give at least one run directory");
  const data = await loadViewerData(runDirs);
  let path: string;
  let assets: string;
  if (out) {
    path = resolve(out);
    assets = join(dirname(path), ASSETS_DIR);
  } else if (runDirs.length === 1) {
    path = runPath(runDirs[0], "report");
    assets = join(dirname(runDirs[0]), ASSETS_DIR);
  } else {
    const slug = runDirs.map((d) => basename(d)).join("-vs-").replace(/[^\w.+-]+/g, "_");
    path = join(dirname(runDirs[0]), `comparison-${slug.slice(0, 120)}.html`);
    assets = join(dirname(path), ASSETS_DIR);
  }
  return await writeViewer(path, data, assets);
}

/**
 * Starts building the page's browser library (`deno bundle`, seconds on a busy machine) in the
 * background, so that the report a run writes when it ends, or after Ctrl-C within the 5 s a
 * stop promises, does not wait for it. A failed build is named on the page by
 * {@link writeRunReport}, which tries again.
 *
 * @example
 * prepareRunReport();
 * const result = await train(config);
 * console.log(await writeRunReport(result.logDir));
 */
export function prepareRunReport(): void {
  browserLibSource().catch(() => undefined);
}
