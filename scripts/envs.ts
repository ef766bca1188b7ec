/**
 * `deno task envs`: this project's tool environments over the Open Reward Standard.
 *
 * - `deno task envs serve [--port 8080]` serves every registered tool environment (the games
 *   with move tools, the arithmetic task, WhoDunIt, the word problems, and any a module
 *   registers with `--env-module`) to any ORS client, e.g. OpenReward's Python SDK or another
 *   tinkerbench run (`base_url` in its `environments:` map).
 * - `deno task envs list` prints each environment's ORS name, registry id, splits and tools.
 */

import { z } from "zod";
import { parseFlags, runCli, UsageError } from "../lib/cli/args.ts";
import { EnvModuleError, importEnvModule, listToolEnvironments } from "../lib/envs/mod.ts";
import type { ToolEnvironment } from "../lib/envs/tool_env.ts";
import { startOrsServer } from "../lib/openreward/server.ts";
import { openDoorWarning, READY_FILE_USAGE, writeReadyFile } from "../lib/http/mod.ts";

const ABOUT =
  "Serves this project's tool environments over the Open Reward Standard (serve), or lists them " +
  "(list).";

const USAGE = `usage: deno task envs serve [--port 8080] [--host 127.0.0.1] [--env NAME ...]
                            [--env-module ./my_envs.ts] [--max-sessions N]
                            [--api-key KEY | --api-key-file PATH] [--ready-file PATH]
       deno task envs list [--env-module ./my_envs.ts]

  serve  serves the tool environments over the Open Reward Standard (ORS): routes /{name}/...,
         sessions and tool calls as server-sent events, GET /environments lists them.
         --env (repeatable) serves only those (ORS names or registry ids); the first is the
         default of bare paths. --max-sessions answers 429 past that many open sessions.
         --api-key requires it as X-API-Key (what ORS clients send) on all but /health;
         \`ps\` shows a key given that way, so prefer --api-key-file (its first line) or
         $TINKERBENCH_ORS_API_KEY. ${READY_FILE_USAGE}.
  list   prints every tool environment: ORS name, registry id, splits, tools.`;

const Flags = z.object({
  port: z.coerce.number().int().min(0).max(65535).default(8080),
  host: z.string().default("127.0.0.1"),
  env: z.array(z.string()).default([]),
  "env-module": z.array(z.string()).default([]),
  "max-sessions": z.coerce.number().int().min(1).optional(),
  "api-key": z.string().min(1).optional(),
  "api-key-file": z.string().min(1).optional(),
  "ready-file": z.string().optional(),
});

await runCli(async () => {
  const [command, ...rest] = Deno.args;
  if (!command) throw new UsageError("give a command: serve or list");
  if (command !== "serve" && command !== "list") {
    throw new UsageError(`unknown command ${JSON.stringify(command)}: use serve or list`);
  }
  const flags = parseFlags(rest, {
    port: { type: "string" },
    host: { type: "string" },
    env: { type: "string", multiple: true },
    "env-module": { type: "string", multiple: true },
    "max-sessions": { type: "string" },
    "api-key": { type: "string" },
    "api-key-file": { type: "string" },
    "ready-file": { type: "string" },
  }, Flags);
  for (const m of flags["env-module"]) {
    try {
      await importEnvModule(m);
    } catch (e) {
      if (e instanceof EnvModuleError) throw new UsageError(e.message);
      throw e;
    }
  }
  const all = listToolEnvironments();
  const chosen = selectEnvironments(all, flags.env);
  const ids = Object.fromEntries(Object.entries(all).map(([id, e]) => [e.name, id]));

  if (command === "list") {
    for (const e of chosen) {
      console.log(
        `${e.name.padEnd(28)} ${ids[e.name].padEnd(30)} splits ${
          e.splits.map((s) => s.name).join(",")
        }  tools ${e.tools.map((t) => t.name).join(", ")}`,
      );
    }
    return;
  }

  const apiKey = await orsKey(flags["api-key"], flags["api-key-file"]);
  const server = await startOrsServer({
    environments: chosen,
    registryIds: ids,
    port: flags.port,
    hostname: flags.host,
    maxSessions: flags["max-sessions"],
    apiKey,
  });
  console.log(`ORS server listening on ${server.address} with ${chosen.length} environments:`);
  console.log(`  ${chosen.map((e) => e.name).join(", ")}`);
  const warning = openDoorWarning(
    flags.host,
    server.port,
    apiKey !== null,
    "--api-key KEY, or --host 127.0.0.1",
  );
  if (warning) console.warn(warning);
  console.log(`list them:  curl ${apiKey ? "-H 'X-API-Key: KEY' " : ""}${server.url}/environments`);
  console.log(
    `train on one:  environments: { ${chosen[0].name}: { base_url: ${server.url} } }`,
  );
  await writeReadyFile(flags["ready-file"], server);
  const { promise: stop, resolve } = Promise.withResolvers<void>();
  Deno.addSignalListener("SIGINT", resolve);
  Deno.addSignalListener("SIGTERM", resolve);
  await stop;
  console.log("stopping…");
  await server.close();
}, { run: "deno task envs", about: ABOUT, usage: USAGE });

/** The server's key: --api-key, else --api-key-file's first line, else the env var, else none. */
async function orsKey(given?: string, file?: string): Promise<string | null> {
  if (given && file) throw new UsageError("give --api-key or --api-key-file, not both");
  if (given) return given;
  if (file) {
    let text: string;
    try {
      text = await Deno.readTextFile(file);
    } catch (e) {
      throw new UsageError(`--api-key-file ${file}: cannot read it (${(e as Error).message})`);
    }
    const key = text.split("\n")[0].trim();
    if (!key) throw new UsageError(`--api-key-file ${file}: its first line is empty`);
    return key;
  }
  return Deno.env.get("TINKERBENCH_ORS_API_KEY") || null;
}

/** The environments named by `--env` (ORS names or registry ids), all when none is named. */
function selectEnvironments(
  all: Readonly<Record<string, ToolEnvironment>>,
  names: string[],
): ToolEnvironment[] {
  if (names.length === 0) return Object.values(all);
  return names.map((n) => {
    const e = all[n] ?? Object.values(all).find((x) => x.name === n.toLowerCase());
    if (!e) {
      const known = Object.values(all).map((x) => x.name).join(", ");
      throw new UsageError(`--env ${n}: no such tool environment (known: ${known})`);
    }
    return e;
  });
}
