/**
 * `deno task mcp`: the runs API's tools over MCP on stdio, for any MCP agent. By default it runs
 * the runs service itself on the data dir; with `--url` it drives a running `deno task runs`.
 */

import process from "node:process";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";
import { parseFlags, runCli, UsageError } from "../lib/cli/args.ts";
import { defaultDataDir } from "../lib/local/server/mod.ts";
import { RunsClient } from "../lib/runs/client.ts";
import { createMcpServer } from "../lib/runs/mcp.ts";
import { RunsService } from "../lib/runs/service.ts";
import { evaluateHeldOut, heldOutEnvironment } from "../lib/trainer/evaluate.ts";
import { LeaseError } from "../lib/runs/store.ts";
import { EnvModuleError } from "../lib/envs/modules.ts";

const ABOUT =
  "Serves the run API's tools over MCP on stdio for any MCP agent: the runs service itself on a data " +
  "dir, or a running `deno task runs` with --url.";

const USAGE = `usage: deno task mcp [--data-dir DIR] [--max-concurrent 1] [--stop-grace-s 120]
                     [--env-module my_env.ts ...]
       deno task mcp --url http://127.0.0.1:8080 [--api-key KEY] [--data-dir DIR]

  Serves the RL tools (rl_list_environments, rl_select_environment, rl_get_current_config,
  rl_edit_config, rl_start_training, rl_check_status, rl_stop_training, rl_get_results,
  rl_test_inference, rl_list_runs, rl_resume_training) over MCP on stdin/stdout. Without --url
  it manages runs itself under <data-dir>/runs-api/ (one manager per data dir: when
  \`deno task runs\` already serves that dir, give its --url instead). With --url, the key is
  --api-key, else $TINKERBENCH_RUNS_API_KEY, else the one that server keeps in --data-dir.`;

const Flags = z.object({
  "data-dir": z.string().min(1).default(defaultDataDir()),
  "max-concurrent": z.coerce.number().int().min(1).max(64).default(1),
  "stop-grace-s": z.coerce.number().min(0).max(86_400).default(120),
  url: z.string().url().optional(),
  "api-key": z.string().min(1).optional(),
  "env-module": z.array(z.string().min(1)).default([]),
});

// stdout carries the protocol: anything else printed there would corrupt it.
console.log = console.error;
console.info = console.error;

await runCli(async () => {
  const flags = parseFlags(Deno.args, {
    "data-dir": { type: "string" },
    "max-concurrent": { type: "string" },
    "stop-grace-s": { type: "string" },
    url: { type: "string" },
    "api-key": { type: "string" },
    "env-module": { type: "string", multiple: true },
  }, Flags);
  let service: RunsService | undefined;
  if (!flags.url) {
    try {
      service = await RunsService.open({
        dataDir: flags["data-dir"],
        maxConcurrent: flags["max-concurrent"],
        stopGraceS: flags["stop-grace-s"],
        envModules: flags["env-module"],
        evaluator: { evaluateHeldOut, heldOutEnvironment },
      });
    } catch (e) {
      if (e instanceof LeaseError || e instanceof EnvModuleError) throw new UsageError(e.message);
      throw e;
    }
  }
  // Without --api-key the client reads the key `deno task runs` keeps in --data-dir.
  const api = service ?? new RunsClient({
    baseUrl: flags.url,
    apiKey: flags["api-key"],
    dataDir: flags["data-dir"],
  });
  const server = createMcpServer(api);
  const transport = new StdioServerTransport();
  const { promise: closed, resolve } = Promise.withResolvers<void>();
  transport.onclose = () => resolve();
  process.stdin.on("end", () => resolve()); // the client went away
  Deno.addSignalListener("SIGINT", resolve);
  Deno.addSignalListener("SIGTERM", resolve);
  await server.connect(transport);
  console.error(
    `tinkerbench MCP server on stdio (${
      flags.url ? `runs server ${flags.url}` : `data dir ${flags["data-dir"]}`
    })`,
  );
  await closed;
  await server.close();
  await service?.close();
}, { run: "deno task mcp", about: ABOUT, usage: USAGE });
