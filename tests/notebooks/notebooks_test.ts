import { assert } from "../assert.ts";
import {
  checkCommittedNotebook,
  checkExecutedNotebook,
  hasJupyter,
  type NotebookJson,
} from "../../scripts/notebooks.ts";
import { plotlyBundle } from "../../lib/viz/jupyter.ts";

const jupyter = await hasJupyter();
if (!jupyter) {
  console.log(
    "notebooks: skipped, jupyter nbconvert is not installed (apt-get install -y " +
      "jupyter-nbconvert python3-nbclient python3-ipykernel; deno jupyter --install --force)",
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
