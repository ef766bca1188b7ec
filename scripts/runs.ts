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
import { isLoopback, READY_FILE_USAGE, writeReadyFile } from "../lib/http/mod.ts";
import { ensureRunsKey } from "../lib/runs/api_key.ts";
import { DEFAULT_MAX_INFERENCE, DEFAULT_MAX_QUEUED } from "../lib/runs/service.ts";

const ABOUT =
  "Serves the run-management API that agents drive (the Hermes RL tools' server at RL_API_URL): " +
  "environments, configs, training runs and their metrics.";

const USAGE = `usage: deno task runs [--port 8080] [--host 127.0.0.1] [--data-dir DIR]
                      [--max-concurrent 1] [--stop-grace-s 120] [--api-key KEY | --no-auth]
                      [--max-queued ${DEFAULT_MAX_QUEUED}] [--max-inference ${DEFAULT_MAX_INFERENCE}]
                      [--env-module my_env.ts ...] [--ready-file PATH]

  Runs and their records go under <data-dir>/runs-api/ (default: $TINKERBENCH_HOME or
  ~/.cache/tinkerbench/local, the local backend's). Training processes keep running when the
  server stops; the next server on the same data dir adopts them.

  Every route but /health needs "Authorization: Bearer KEY". The key is --api-key, else
  $TINKERBENCH_RUNS_API_KEY, else the data dir's own: made on the first start, printed once,
  and kept in <data-dir>/runs-api/api-key (mode 0600), where \`deno task mcp --url\` and the
  tools' client (lib/runs/client.ts) read it. --no-auth (loopback only) turns keys off. Web
  pages are refused whatever the key: a foreign Origin, a non-loopback Host, or a body that is
  not application/json.

  --max-queued caps the runs waiting for a slot and --max-inference the /test/inference calls
  at once; one more is a 429.
  --env-module imports a module that registers environments (as deno task train's does): they
  are listed and selectable, and runs on them load the module.
  Agents: RL_API_URL=http://127.0.0.1:8080 for the Hermes tools, or \`deno task mcp\`.
  ${READY_FILE_USAGE}.`;

const Flags = z.object({
  port: z.coerce.number().int().min(0).max(65535).default(8080),
  host: z.string().min(1).default("127.0.0.1"),
  "data-dir": z.string().min(1).default(defaultDataDir()),
  "max-concurrent": z.coerce.number().int().min(1).max(64).default(1),
  "stop-grace-s": z.coerce.number().min(0).max(86_400).default(120),
  "api-key": z.string().min(1).optional(),
  "no-auth": z.boolean().default(false),
  "max-queued": z.coerce.number().int().min(0).max(1024).default(DEFAULT_MAX_QUEUED),
  "max-inference": z.coerce.number().int().min(1).max(64).default(DEFAULT_MAX_INFERENCE),
  "env-module": z.array(z.string().min(1)).default([]),
  "ready-file": z.string().optional(),
});

await runCli(async () => {
  const flags = parseFlags(Deno.args, {
    port: { type: "string" },
    host: { type: "string" },
    "data-dir": { type: "string" },
    "max-concurrent": { type: "string" },
    "stop-grace-s": { type: "string" },
    "api-key": { type: "string" },
    "no-auth": { type: "boolean" },
    "max-queued": { type: "string" },
    "max-inference": { type: "string" },
    "env-module": { type: "string", multiple: true },
    "ready-file": { type: "string" },
  }, Flags);
  const given = flags["api-key"] ?? (Deno.env.get("TINKERBENCH_RUNS_API_KEY") || undefined);
  if (flags["no-auth"] && given) throw new UsageError("--no-auth and an API key contradict");
  if (flags["no-auth"] && !isLoopback(flags.host)) {
    throw new UsageError(
      `--no-auth is for loopback only: on ${flags.host} anyone who reaches the port could start ` +
        "runs; drop --no-auth (a key is made for you) or use --host 127.0.0.1",
    );
  }
  const stored = flags["no-auth"] || given ? undefined : await ensureRunsKey(flags["data-dir"]);
  const apiKey = given ?? stored?.key;
  let server;
  try {
    server = await startRunsServer({
      port: flags.port,
      hostname: flags.host,
      dataDir: flags["data-dir"],
      maxConcurrent: flags["max-concurrent"],
      stopGraceS: flags["stop-grace-s"],
      envModules: flags["env-module"],
      maxQueued: flags["max-queued"],
      maxInference: flags["max-inference"],
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
  if (stored?.created) {
    console.log(
      `API key (shown this once; kept in ${stored.path}, where deno task mcp and the tools' ` +
        `client read it): ${stored.key}`,
    );
  } else if (stored) console.log(`API key: the one in ${stored.path}`);
  else if (!apiKey) console.log("no API key (--no-auth): anyone on this machine may drive runs");
  console.log(
    `runs: ${runs.total} recorded, ${runs.running} running, ${runs.queued} queued; ` +
      `at most ${flags["max-concurrent"]} at once`,
  );
  console.log(`agents: RL_API_URL=${server.url}`);
  await writeReadyFile(flags["ready-file"], server);
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
