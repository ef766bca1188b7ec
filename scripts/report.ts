/**
 * `deno task report <log_dir> [<log_dir> ...]`: a run's metrics as an HTML page of Plotly
 * charts (`report.html` in the run directory), or a comparison of several runs.
 */

import { runCli, UsageError } from "../lib/cli/args.ts";
import { writeRunReport } from "../lib/trainer/report.ts";

const ABOUT =
  "Writes a run's metrics as an HTML page of charts (report.html in its run directory), or a " +
  "comparison of several runs, and prints the page's path.";

const USAGE = "usage: deno task report <log_dir> [<another log_dir> ...]";

await runCli(async () => {
  if (Deno.args.length === 0) {
    throw new UsageError("give a run directory");
  }
  for (const dir of Deno.args) {
    try {
      await Deno.stat(`${dir}/metrics.jsonl`);
    } catch {
      throw new UsageError(`${dir} has no metrics.jsonl: is it a run directory?`);
    }
  }
  console.log(await writeRunReport(...Deno.args));
}, { run: "deno task report", about: ABOUT, usage: USAGE });
