/**
 * `deno run -A scripts/notebooks.ts [--out DIR] [notebooks/NAME.ipynb ...]`: executes every
 * notebook in `notebooks/` headless with the Deno kernel (`jupyter nbconvert --execute`, copies
 * written to DIR, default `tmp/nb/`) and checks each one: committed without outputs, executed in under 3 minutes, no
 * error output, at least one table (a Polars frame's `text/html`) and one Plotly figure
 * (`application/vnd.plotly.v1+json`, with its `text/html` fallback; the first figure carries
 * plotly.js so an HTML export draws every figure offline). Exit code 0 when every check passes, 1 when one fails,
 * 2 when jupyter is missing.
 *
 * Setup: `apt-get install -y jupyter-nbconvert python3-nbclient python3-ipykernel`. The kernel
 * is this checkout's own Deno (the one running this script), registered in
 * `.tinkerbench/jupyter/` and put first on `JUPYTER_PATH`, whatever Deno kernel another checkout
 * registered machine-wide (`deno jupyter --install` writes an absolute path there).
 */

import { basename, join } from "node:path";

/** Longest a notebook may take, in seconds. */
export const NOTEBOOK_TIME_LIMIT_S = 180;

const PLOTLY = "application/vnd.plotly.v1+json";
/** The last statement of the plotly.js bundle: the HTML that carries the library has it. */
const PLOTLY_JS_MARKER = "window.Plotly = Plotly;";

/** The parts of an .ipynb file the checks read. */
export interface NotebookJson {
  cells: {
    cell_type: string;
    source?: string | string[];
    outputs?: {
      output_type: string;
      data?: Record<string, unknown>;
      ename?: string;
      evalue?: string;
    }[];
  }[];
  metadata?: { kernelspec?: { name?: string } };
}

/** What a check found in one executed notebook. */
export interface NotebookReport {
  tables: number;
  figures: number;
  problems: string[];
}

/**
 * Checks an executed notebook: no error outputs (each named by its cell), at least one HTML
 * table and one Plotly figure, as many figures and tables in each cell as the cell's
 * `showFigure(` and `showFrame(` calls, every figure with an HTML fallback that draws it (the
 * first one carrying plotly.js), and the Deno kernel as its kernelspec.
 */
export function checkExecutedNotebook(nb: NotebookJson): NotebookReport {
  const problems: string[] = [];
  let tables = 0, figures = 0;
  if (nb.metadata?.kernelspec?.name !== "deno") {
    problems.push(`kernelspec is ${JSON.stringify(nb.metadata?.kernelspec?.name)}, not "deno"`);
  }
  nb.cells.forEach((cell, i) => {
    const source = Array.isArray(cell.source) ? cell.source.join("") : cell.source ?? "";
    const want = {
      figures: source.split("showFigure(").length - 1,
      tables: source.split("showFrame(").length - 1,
    };
    const got = { figures: 0, tables: 0 };
    for (const out of cell.outputs ?? []) {
      if (out.output_type === "error") {
        problems.push(`cell ${i}: ${out.ename}: ${String(out.evalue).split("\n")[0]}`);
      }
      const html = out.data?.["text/html"];
      const text = Array.isArray(html) ? html.join("") : html;
      if (typeof text === "string" && text.includes("<table")) got.tables++;
      if (out.data?.[PLOTLY] !== undefined) {
        got.figures++;
        if (typeof text !== "string" || !text.includes("Plotly.newPlot(")) {
          problems.push(`cell ${i}: a Plotly figure without its text/html fallback`);
        } else if (figures + got.figures === 1 && !text.includes(PLOTLY_JS_MARKER)) {
          problems.push(`cell ${i}: the first Plotly figure does not carry plotly.js`);
        }
      }
    }
    for (const kind of ["figures", "tables"] as const) {
      if (cell.cell_type === "code" && got[kind] < want[kind]) {
        problems.push(`cell ${i}: ${got[kind]} ${kind} shown, ${want[kind]} expected`);
      }
    }
    tables += got.tables;
    figures += got.figures;
  });
  if (tables === 0) problems.push("no table output (text/html of a Polars frame)");
  if (figures === 0) problems.push(`no ${PLOTLY} output`);
  return { tables, figures, problems };
}

/** Problems of a notebook as committed: it must carry no outputs (they are cleared). */
export function checkCommittedNotebook(nb: NotebookJson): string[] {
  const withOutputs = nb.cells.flatMap((c, i) => (c.outputs?.length ? [i] : []));
  return withOutputs.length
    ? [`committed with outputs in cells ${withOutputs.join(", ")}: clear them before committing`]
    : [];
}

/** Where this checkout registers its own Deno kernel (a `JUPYTER_PATH` entry). */
export const CHECKOUT_JUPYTER_DIR = new URL("../.tinkerbench/jupyter", import.meta.url).pathname;

/**
 * Registers the kernel `deno` running this Deno (`Deno.execPath()`) under
 * {@link CHECKOUT_JUPYTER_DIR}, and returns the environment under which Jupyter finds it
 * before any other `deno` kernel. Written atomically: concurrent runs write the same file.
 */
export async function checkoutKernelEnv(): Promise<{ JUPYTER_PATH: string }> {
  const dir = join(CHECKOUT_JUPYTER_DIR, "kernels", "deno");
  await Deno.mkdir(dir, { recursive: true });
  const spec = {
    argv: [Deno.execPath(), "jupyter", "--kernel", "--conn", "{connection_file}"],
    display_name: "Deno (this checkout)",
    language: "typescript",
  };
  const tmp = await Deno.makeTempFile({ dir, suffix: ".json" });
  await Deno.writeTextFile(tmp, JSON.stringify(spec, null, 2) + "\n");
  await Deno.rename(tmp, join(dir, "kernel.json"));
  const rest = Deno.env.get("JUPYTER_PATH");
  return { JUPYTER_PATH: rest ? `${CHECKOUT_JUPYTER_DIR}:${rest}` : CHECKOUT_JUPYTER_DIR };
}

/** True when `jupyter nbconvert` can be run. */
export async function hasJupyter(): Promise<boolean> {
  try {
    const out = await new Deno.Command("jupyter", {
      args: ["nbconvert", "--version"],
      stdout: "null",
      stderr: "null",
    }).output();
    return out.success;
  } catch {
    return false;
  }
}

/** Executes one notebook into `outDir` and checks it; returns the report and the time taken. */
export async function runNotebook(
  path: string,
  outDir: string,
): Promise<NotebookReport & { seconds: number }> {
  const committed = JSON.parse(await Deno.readTextFile(path)) as NotebookJson;
  const t0 = performance.now();
  const out = await new Deno.Command("jupyter", {
    args: [
      "nbconvert",
      "--to",
      "notebook",
      "--execute",
      "--allow-errors",
      `--ExecutePreprocessor.timeout=${NOTEBOOK_TIME_LIMIT_S}`,
      "--ExecutePreprocessor.kernel_name=deno",
      "--output-dir",
      outDir,
      path,
    ],
    env: { NO_COLOR: "1", ...(await checkoutKernelEnv()) },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const seconds = (performance.now() - t0) / 1000;
  const precheck = checkCommittedNotebook(committed);
  if (!out.success) {
    const err = new TextDecoder().decode(out.stderr);
    const hint = /No such kernel/i.test(err) ? ` (looked in ${CHECKOUT_JUPYTER_DIR} first)` : "";
    const last = err.trim().split("\n").slice(-3).join(" | ");
    return {
      tables: 0,
      figures: 0,
      seconds,
      problems: [...precheck, `nbconvert failed${hint}: ${last}`],
    };
  }
  const executed = JSON.parse(
    await Deno.readTextFile(join(outDir, basename(path))),
  ) as NotebookJson;
  const report = checkExecutedNotebook(executed);
  const problems = [...precheck, ...report.problems];
  if (seconds > NOTEBOOK_TIME_LIMIT_S) {
    problems.push(`took ${seconds.toFixed(0)} s, more than ${NOTEBOOK_TIME_LIMIT_S} s`);
  }
  return { ...report, problems, seconds };
}

async function main(): Promise<number> {
  const root = new URL("..", import.meta.url).pathname;
  if (!(await hasJupyter())) {
    console.error(
      "jupyter nbconvert not found; install it: apt-get install -y jupyter-nbconvert " +
        "python3-nbclient python3-ipykernel",
    );
    return 2;
  }
  const args = [...Deno.args];
  const at = args.indexOf("--out");
  const out = at >= 0 ? args.splice(at, 2)[1] : undefined;
  if (at >= 0 && !out) {
    console.error("usage: deno run -A scripts/notebooks.ts [--out DIR] [NOTEBOOK.ipynb ...]");
    return 1;
  }
  let paths = args;
  if (paths.length === 0) {
    paths = [];
    for await (const e of Deno.readDir(join(root, "notebooks"))) {
      if (e.isFile && e.name.endsWith(".ipynb")) paths.push(join(root, "notebooks", e.name));
    }
    paths.sort();
  }
  if (paths.length === 0) {
    console.error("no notebooks found in notebooks/");
    return 1;
  }
  const outDir = out ?? join(root, "tmp", "nb");
  await Deno.mkdir(outDir, { recursive: true });
  let failed = 0;
  for (const p of paths) {
    const r = await runNotebook(p, outDir);
    const summary = `${basename(p)} ${
      r.seconds.toFixed(1)
    } s (tables ${r.tables}, figures ${r.figures})`;
    if (r.problems.length === 0) console.log(`ok ${summary}`);
    else {
      failed++;
      console.log(`FAILED ${summary}`);
      for (const problem of r.problems) console.log(`  - ${problem}`);
    }
  }
  console.log(
    `notebooks: ${paths.length - failed} passed, ${failed} failed (executed copies in ${outDir})`,
  );
  return failed ? 1 : 0;
}

if (import.meta.main) Deno.exit(await main());
