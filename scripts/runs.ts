/**
 * `deno task runs`: the run-management API that agents drive (the Hermes RL tools' server, at
 * `RL_API_URL`). Runs are `deno task train` processes on config files it writes; their records
 * live in SQLite under the data dir, so a restarted server lists them all again.
 */

import { z } from "zod";
import { parseFlags, runCli, UsageError } from "../lib/cli/args.ts";
import { defaultDataDir } from "../lib/local/server/mod.ts";
import { startRunsServer } from "../lib/runs/server.ts";
import { evaluateHeldOut, heldOutEnvironment } from "../lib/trainer/evaluate.ts";
import { LeaseError } from "../lib/runs/store.ts";
import { EnvModuleError } from "../lib/envs/modules.ts";
import { openDoorWarning } from "../lib/http/mod.ts";

const ABOUT =
  "Serves the run-management API that agents drive (the Hermes RL tools' server at RL_API_URL): " +
  "environments, configs, training runs and their metrics.";

const USAGE = `usage: deno task runs [--port 8080] [--host 127.0.0.1] [--data-dir DIR]
                      [--max-concurrent 1] [--stop-grace-s 120] [--api-key KEY]
                      [--env-module my_env.ts ...]

  Runs and their records go under <data-dir>/runs-api/ (default: $TINKERBENCH_HOME or
  ~/.cache/tinkerbench/local, the local backend's). Training processes keep running when the
  server stops; the next server on the same data dir adopts them. --api-key (or
  TINKERBENCH_RUNS_API_KEY) makes every route but /health need "Authorization: Bearer KEY".
  --env-module imports a module that registers environments (as deno task train's does): they
  are listed and selectable, and runs on them load the module.
  Agents: RL_API_URL=http://127.0.0.1:8080 for the Hermes tools, or \`deno task mcp\`.`;

const Flags = z.object({
  port: z.coerce.number().int().min(0).max(65535).default(8080),
  host: z.string().min(1).default("127.0.0.1"),
  "data-dir": z.string().min(1).default(defaultDataDir()),
  "max-concurrent": z.coerce.number().int().min(1).max(64).default(1),
  "stop-grace-s": z.coerce.number().min(0).max(86_400).default(120),
  "api-key": z.string().min(1).optional(),
  "env-module": z.array(z.string().min(1)).default([]),
});

await runCli(async () => {
  const flags = parseFlags(Deno.args, {
    port: { type: "string" },
    host: { type: "string" },
    "data-dir": { type: "string" },
    "max-concurrent": { type: "string" },
    "stop-grace-s": { type: "string" },
    "api-key": { type: "string" },
    "env-module": { type: "string", multiple: true },
  }, Flags);
  const apiKey = flags["api-key"] ?? Deno.env.get("TINKERBENCH_RUNS_API_KEY");
  let server;
  try {
    server = await startRunsServer({
      port: flags.port,
      hostname: flags.host,
      dataDir: flags["data-dir"],
      maxConcurrent: flags["max-concurrent"],
      stopGraceS: flags["stop-grace-s"],
      envModules: flags["env-module"],
      apiKey,
      // The trainer's own evaluator scores checkpoints (lib/runs does not import the trainer).
      evaluator: { evaluateHeldOut, heldOutEnvironment },
    });
  } catch (e) {
    if (e instanceof LeaseError || e instanceof EnvModuleError) throw new UsageError(e.message);
    throw e;
  }
  const { runs } = await server.service.health();
  console.log(
    `tinkerbench runs API listening on ${server.address}  (data in ${flags["data-dir"]}/runs-api)`,
  );
  const warning = openDoorWarning(
    flags.host,
    server.port,
    apiKey !== undefined,
    "--api-key KEY, or --host 127.0.0.1",
  );
  if (warning) console.warn(warning);
  console.log(
    `runs: ${runs.total} recorded, ${runs.running} running, ${runs.queued} queued; ` +
      `at most ${flags["max-concurrent"]} at once`,
  );
  console.log(`agents: RL_API_URL=${server.url}`);
  const { promise: stop, resolve } = Promise.withResolvers<void>();
  Deno.addSignalListener("SIGINT", resolve);
  Deno.addSignalListener("SIGTERM", resolve);
  await stop;
  const running = (await server.service.health()).runs.running;
  await server.close();
  console.log(
    running
      ? `stopped; ${running} run(s) keep training and the next server adopts them`
      : "stopped",
  );
}, { run: "deno task runs", about: ABOUT, usage: USAGE });
