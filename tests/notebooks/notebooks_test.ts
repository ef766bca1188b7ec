import { join } from "node:path";
import { assert } from "../assert.ts";
import {
  checkCommittedNotebook,
  checkExecutedNotebook,
  CHECKOUT_JUPYTER_DIR,
  checkoutKernelEnv,
  hasJupyter,
  type NotebookJson,
} from "../../scripts/notebooks.ts";
import { plotlyBundle } from "../../lib/viz/jupyter.ts";

const jupyter = await hasJupyter();
if (!jupyter) {
  console.log(
    "notebooks: skipped, jupyter nbconvert is not installed (apt-get install -y " +
      "jupyter-nbconvert python3-nbclient python3-ipykernel)",
  );
}

const kernel = { kernelspec: { name: "deno" } };
const table = { output_type: "display_data", data: { "text/html": "<table></table>" } };
const fig = { data: [{ type: "scatter", y: [1, 2] }], layout: {} };
const figure = { output_type: "display_data", data: plotlyBundle(fig, { includePlotlyJs: true }) };
const laterFigure = { output_type: "display_data", data: plotlyBundle(fig) };

Deno.test("notebook checks: errors, missing tables/figures, lost outputs and kept outputs are caught", () => {
  const good: NotebookJson = {
    metadata: kernel,
    cells: [
      { cell_type: "markdown", source: "# t" },
      { cell_type: "code", source: ["await viz.showFrame(df);\n", "x"], outputs: [table] },
      { cell_type: "code", source: "await viz.showFigure(f);", outputs: [figure] },
      { cell_type: "code", source: "await viz.showFigure(f);", outputs: [laterFigure] },
    ],
  };
  assert.deepEqual(checkExecutedNotebook(good), { tables: 1, figures: 2, problems: [] });

  // Figures an HTML export cannot draw: no fallback, or no plotly.js before the first one.
  const jsonOnly = {
    output_type: "display_data",
    data: { "application/vnd.plotly.v1+json": fig, "text/plain": "Plotly figure" },
  };
  const undrawable: NotebookJson = {
    metadata: kernel,
    cells: [
      { cell_type: "code", source: "await viz.showFrame(df);", outputs: [table] },
      { cell_type: "code", source: "await viz.showFigure(f);", outputs: [laterFigure] },
      { cell_type: "code", source: "await viz.showFigure(f);", outputs: [jsonOnly] },
    ],
  };
  assert.deepEqual(checkExecutedNotebook(undrawable).problems, [
    "cell 1: the first Plotly figure does not carry plotly.js",
    "cell 2: a Plotly figure without its text/html fallback",
  ]);

  const bad: NotebookJson = {
    metadata: { kernelspec: { name: "python3" } },
    cells: [
      {
        cell_type: "code",
        source: "await viz.showFigure(f);",
        outputs: [{ output_type: "error", ename: "TypeError", evalue: "x is undefined\nmore" }],
      },
    ],
  };
  assert.deepEqual(checkExecutedNotebook(bad).problems, [
    'kernelspec is "python3", not "deno"',
    "cell 0: TypeError: x is undefined",
    "cell 0: 0 figures shown, 1 expected",
    "no table output (text/html of a Polars frame)",
    "no application/vnd.plotly.v1+json output",
  ]);
  assert.deepEqual(checkCommittedNotebook(good), [
    "committed with outputs in cells 1, 2, 3: clear them before committing",
  ]);
  assert.deepEqual(checkCommittedNotebook({ cells: [{ cell_type: "code", outputs: [] }] }), []);
});

Deno.test({
  name:
    "notebooks: every notebook runs headless with the Deno kernel and shows its tables and figures",
  ignore: !jupyter,
  fn: async () => {
    // Its own output directory, so that concurrent test runs do not share executed copies.
    const outDir = await Deno.makeTempDir({ prefix: "tb-nb-test-" });
    const script = new URL("../../scripts/notebooks.ts", import.meta.url).pathname;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", script, "--out", outDir],
      stdout: "piped",
      stderr: "piped",
    }).output();
    // Kept when a check fails: the executed copies show the failing cells.
    if (out.success) await Deno.remove(outDir, { recursive: true });
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    console.log(text.trim());
    assert.ok(out.success, `scripts/notebooks.ts failed:\n${text}`);
    assert.match(text, /notebooks: [1-9]\d* passed, 0 failed/);
  },
});

Deno.test({
  name: "notebooks: the kernel is this checkout's Deno, whatever another checkout registered",
  ignore: !jupyter,
  fn: async () => {
    // Another checkout's registration, as `deno jupyter --install` writes it machine-wide.
    const other = await Deno.makeTempDir({ prefix: "tb-nb-other-" });
    await Deno.mkdir(join(other, "kernels", "deno"), { recursive: true });
    await Deno.writeTextFile(
      join(other, "kernels", "deno", "kernel.json"),
      JSON.stringify({
        argv: [
          "/deleted/clone/tools/node_modules/deno/deno",
          "jupyter",
          "--kernel",
          "--conn",
          "{connection_file}",
        ],
        display_name: "Deno",
        language: "typescript",
      }),
    );
    const env = await checkoutKernelEnv();
    // Which `deno` kernel Jupyter picks, asked of jupyter_client in Jupyter's own Python.
    const python = (await jupyterPython()) ?? "python3";
    const out = await new Deno.Command(python, {
      args: [
        "-c",
        "import json; from jupyter_client.kernelspec import KernelSpecManager as M; " +
        "k = M().get_kernel_spec('deno'); print(json.dumps([k.resource_dir, k.argv[0]]))",
      ],
      env: { ...env, JUPYTER_DATA_DIR: other },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    assert.deepEqual(JSON.parse(new TextDecoder().decode(out.stdout)), [
      join(CHECKOUT_JUPYTER_DIR, "kernels", "deno"),
      Deno.execPath(),
    ]);
    await Deno.remove(other, { recursive: true });
  },
});

/** The interpreter of the `jupyter` command on PATH (its shebang), if it has one. */
async function jupyterPython(): Promise<string | undefined> {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      const first = (await Deno.readTextFile(join(dir, "jupyter"))).split("\n")[0];
      return first.startsWith("#!") ? first.slice(2).trim().split(" ")[0] : undefined;
    } catch { /* not in this directory */ }
  }
  return undefined;
}
