/**
 * `deno task report RUN_DIR [RUN_DIR ...]`: the run viewer, the summary charts of a run (or of
 * several side by side) and every episode of its rollouts, as a static page; `--serve` serves
 * it live instead, updating as steps land.
 */

import { z } from "zod";
import { parseCommandLine, runCli, UsageError } from "../lib/cli/args.ts";
import { startViewerServer, writeRunReport } from "../lib/viewer/mod.ts";

const USAGE = `usage: deno task report RUN_DIR [RUN_DIR ...] [--out FILE]
       deno task report --serve RUN_DIR [RUN_DIR ...] [--port 8070] [--host 127.0.0.1]`;

const ABOUT =
  `Shows runs in the run viewer: summary charts (reward, success, loss, advantages, held-out
success...) and every episode of rollouts/, filterable, with transcripts, tool calls, judge votes,
hints, the episode's group, and each sampled token coloured by its advantage (or, for opd and
combine, teacher - student log-prob). One run: RUN_DIR/report.html. Several runs (any methods):
a comparison beside them (comparison-A-vs-B.html), or --out FILE. plotly.js and viewer.js are
written once into .viewer/ next to the page's run directories (beside --out otherwise); the page
opens offline from file://. --serve serves the viewer on loopback and shows steps as they land.`;

const Flags = z.object({
  out: z.string().min(1).optional(),
  serve: z.boolean().default(false),
  port: z.coerce.number().int().min(0).max(65535).default(8070),
  host: z.string().min(1).default("127.0.0.1"),
});

await runCli(async () => {
  const { flags, positionals: dirs } = parseCommandLine(Deno.args, {
    out: { type: "string" },
    serve: { type: "boolean" },
    port: { type: "string" },
    host: { type: "string" },
  }, Flags);
  if (dirs.length === 0) throw new UsageError("give a run directory");
  for (const dir of dirs) {
    // Served live, a run may not have logged its first step yet: the directory is enough.
    const need = flags.serve ? dir : `${dir}/metrics.jsonl`;
    try {
      await Deno.stat(need);
    } catch {
      throw new UsageError(
        flags.serve
          ? `${dir} does not exist`
          : `${dir} has no metrics.jsonl: is it a run directory?`,
      );
    }
  }
  if (!flags.serve) return console.log(await writeRunReport(dirs, { out: flags.out }));
  if (flags.out) throw new UsageError("--out writes a file; --serve serves the page instead");
  const server = await startViewerServer({ dirs, port: flags.port, hostname: flags.host });
  console.log(`run viewer of ${dirs.join(", ")} at ${server.url}  (Ctrl-C stops)`);
  const { promise: stop, resolve } = Promise.withResolvers<void>();
  Deno.addSignalListener("SIGINT", resolve);
  await stop;
  await server.close();
}, { run: "deno task report", about: ABOUT, usage: USAGE });
