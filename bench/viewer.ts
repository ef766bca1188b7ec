/**
 * The run viewer's size and opening time: the report of a real two-step run (`deno task train
 * --max-steps 2 --batch-size 2 --group-size 4`), then that run's files replicated to 100 steps
 * (every step's records and metrics row copied from the real ones, renumbered: labelled
 * "replicated" in the directory name), each opened in headless Chromium (a fresh browser per
 * round, so plotly.js is parsed cold). Sizes compare the report as it was (plotly.js inlined,
 * charts only) with the viewer (plotly.js shared in `.viewer/`, every episode embedded).
 *
 * @module
 */

import { join } from "node:path";
import { figuresToHtml } from "../lib/viz/mod.ts";
import { loadViewerData } from "../lib/viewer/mod.ts";
import { writeRunReport } from "../lib/viewer/report.ts";
import { readJsonl, rolloutsPath, runPath } from "../lib/rundir/mod.ts";

/** Where a Chromium binary is, or null: `CHROMIUM_PATH`, then Debian's and Chrome's paths. */
export function findChromium(): string | null {
  const candidates = [
    Deno.env.get("CHROMIUM_PATH"),
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
  ];
  for (const p of candidates) {
    if (!p) continue;
    try {
      if (Deno.statSync(p).isFile) return p;
    } catch { /* not there */ }
  }
  return null;
}

/**
 * Trains a real run of `steps` steps (batch 2, groups of 4, 8 held-out episodes) into `dir`
 * with `deno task train` (and `extra` flags), handing each line it prints to `onLine`, and
 * returns `dir` once it exits 0.
 */
export async function trainSmallRun(
  dir: string,
  steps = 2,
  extra: string[] = [],
  onLine: (line: string) => void = () => {},
): Promise<string> {
  const deno = new URL("../tools/node_modules/.bin/deno", import.meta.url).pathname;
  const child = new Deno.Command(deno, {
    args: [
      "run",
      "-A",
      new URL("../scripts/train.ts", import.meta.url).pathname,
      "--max-steps",
      String(steps),
      "--batch-size",
      "2",
      "--group-size",
      "4",
      "--eval.episodes",
      "8",
      "--log-path",
      dir,
      ...extra,
    ],
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let rest = "";
  for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
    const lines = (rest + chunk).split("\n");
    rest = lines.pop()!;
    lines.forEach(onLine);
  }
  if (rest) onLine(rest);
  const { success } = await child.status;
  if (!success) throw new Error(`train failed: ${(await stderr).slice(-500)}`);
  return dir;
}

/**
 * Copies run `src` into `dst` as a run of `steps` steps: step s gets the metrics row, timing
 * spans and rollout records of the real step ((s − 1) mod n) + 1, renumbered (group ids too).
 */
export async function replicateRun(src: string, dst: string, steps: number): Promise<string> {
  await Deno.mkdir(runPath(dst, "rollouts"), { recursive: true });
  for (const f of ["config", "evaluation"] as const) {
    await Deno.copyFile(runPath(src, f), runPath(dst, f)).catch(() => undefined);
  }
  const rows = (await readJsonl(runPath(src, "metrics"))) as Record<string, unknown>[];
  const spans = (await readJsonl(runPath(src, "spans"))) as Record<string, number>[];
  const n = rows.length;
  const metrics: string[] = [], timing: string[] = [];
  for (let s = 1; s <= steps; s++) {
    const from = ((s - 1) % n) + 1;
    metrics.push(JSON.stringify({ ...rows[from - 1], step: s }));
    for (const sp of spans.filter((x) => x.step === from)) {
      timing.push(JSON.stringify({ ...sp, step: s }));
    }
    const pad = (k: number) => String(k).padStart(6, "0");
    const records = await readJsonl(rolloutsPath(src, from));
    await Deno.writeTextFile(
      rolloutsPath(dst, s),
      records.map((r) => {
        const rec = r as Record<string, unknown>;
        const gid = String(rec.group_id).replace(/^s\d+/, `s${pad(s)}`);
        return JSON.stringify({ ...rec, step: s, group_id: gid }) + "\n";
      }).join(""),
    );
  }
  await Deno.writeTextFile(runPath(dst, "metrics"), metrics.join("\n") + "\n");
  await Deno.writeTextFile(runPath(dst, "spans"), timing.join("\n") + "\n");
  return dst;
}

/** Milliseconds from navigation to the viewer's `data-ready` (charts on screen, table drawn). */
export async function timeViewerOpen(chromium: string, url: string): Promise<number> {
  const { default: puppeteer } = await import("puppeteer-core");
  const browser = await puppeteer.launch({
    executablePath: chromium,
    args: ["--no-sandbox", "--disable-gpu"],
    headless: true,
  });
  try {
    const page = await browser.newPage();
    const t0 = performance.now();
    await page.goto(url, { waitUntil: "load" });
    await page.waitForSelector("body[data-ready=true]");
    return performance.now() - t0;
  } finally {
    await browser.close();
  }
}

/** Sizes and opening times of the viewer; see the module doc. */
/** Sizes: the real run's steps, the steps it is replicated to, and page openings per size. */
export const VIEWER_BENCH = { steps: 2, replicatedSteps: 100, rounds: 3 };

/** The viewer's size and opening time for a real run and its replica (see the module's doc). */
export async function benchViewer(log: (msg: string) => void) {
  const { rounds } = VIEWER_BENCH;
  const chromium = findChromium();
  if (!chromium) throw new Error("no chromium binary (apt-get install chromium)");
  const root = await Deno.makeTempDir({ prefix: "tb-viewer-bench-" });
  log(`viewer: training a real ${VIEWER_BENCH.steps}-step run`);
  const real = await trainSmallRun(join(root, "real"), VIEWER_BENCH.steps);
  const sizes: Record<string, unknown>[] = [];
  for (const steps of [VIEWER_BENCH.steps, VIEWER_BENCH.replicatedSteps]) {
    const dir = steps === VIEWER_BENCH.steps
      ? real
      : await replicateRun(real, join(root, `replicated-${steps}`), steps);
    const data = await loadViewerData([dir]);
    const episodes = data.runs[0].episodes.length;
    const before = new TextEncoder().encode(figuresToHtml(data.title, data.figures)).length;
    const page = await writeRunReport(dir);
    const after = (await Deno.stat(page)).size;
    const open_ms: number[] = [];
    for (let r = 0; r < rounds; r++) open_ms.push(await timeViewerOpen(chromium, `file://${page}`));
    log(
      `viewer: ${steps} steps, ${episodes} episodes: ${after} bytes, open ${
        open_ms.map(Math.round)
      } ms`,
    );
    sizes.push({
      run: steps === VIEWER_BENCH.steps ? "real" : "replicated from the real run",
      steps,
      episodes,
      report_bytes_before: before,
      report_bytes_after: after,
      open_ms,
    });
  }
  const assets = (await Deno.stat(join(root, ".viewer", "plotly.min.js"))).size +
    (await Deno.stat(join(root, ".viewer", "viewer.js"))).size;
  const [a, b] = sizes as { episodes: number; report_bytes_after: number }[];
  const perThousand = Math.round(
    (b.report_bytes_after - a.report_bytes_after) / (b.episodes - a.episodes) * 1000,
  );
  await Deno.remove(root, { recursive: true });
  return {
    chromium: new TextDecoder().decode(
      (await new Deno.Command(chromium, { args: ["--version"], stderr: "null" }).output()).stdout,
    ).trim(),
    shared_assets_bytes: assets,
    bytes_per_1000_episodes: perThousand,
    reports: sizes,
  };
}
