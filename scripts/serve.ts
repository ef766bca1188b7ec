/**
 * `deno task serve`: runs the embedded local backend as a standalone Tinker-compatible server,
 * e.g. for the official Python SDK or for several training scripts sharing one backend.
 */

import { z } from "zod";
import { parseFlags, runCli } from "../lib/cli/args.ts";
import { defaultDataDir, startLocalServer } from "../lib/local/server/mod.ts";
import { FaultConfigSchema } from "../lib/local/server/faults.ts";
import { openDoorWarning, READY_FILE_USAGE, writeReadyFile } from "../lib/http/mod.ts";

const ABOUT =
  "Runs the embedded local backend as a standalone Tinker-compatible server, e.g. for the official " +
  "Python SDK or for several training scripts sharing one backend.";
import { SamplerEngineSchema } from "../lib/local/sampler/mod.ts";

const USAGE = `usage: deno task serve [--port 8000] [--host 127.0.0.1] [--data-dir DIR]
                       [--long-poll-ms 20000] [--prefix-cache-mb 192] [--sampler-engine onnx]
                       [--faults JSON] [--log] [--api-key KEY] [--ready-file PATH]

  --api-key KEY makes clients trade KEY for a short-lived JWT at /api/v1/auth/token (as the
  hosted service does; the Tinker SDK and our client do it by themselves) and refuses other
  calls without one (401). Default: any key is accepted, fine on loopback. The key can also be
  given as $TINKERBENCH_SERVE_API_KEY, which \`ps\` does not show.

  ${READY_FILE_USAGE}.

  --sampler-engine picks what samplers decode on: onnx (ONNX Runtime, the default) or jax
  (jax-js, the learner's engine); the default comes from $TINKERBENCH_SAMPLER_ENGINE if set.

  --prefix-cache-mb is the memory the samplers may keep earlier turns' keys and values in (host
  memory on ONNX Runtime, the wasm heap on jax-js); 0 turns the prefix cache off. Default: 192 on
  onnx, 0 on jax (where it can exhaust the 4 GiB wasm heap when the same server trains too).

  --faults '{"serverError":0.1,"dropAfter":0.05,"latencyMs":[0,100]}' injects failures for
  client tests (keys: seed, latencyMs, serverError, rateLimit, timeout, expired, dropBefore,
  dropAfter, paths).`;

const Flags = z.object({
  port: z.coerce.number().int().min(0).max(65535).default(8000),
  host: z.string().default("127.0.0.1"),
  "data-dir": z.string().default(defaultDataDir()),
  "long-poll-ms": z.coerce.number().int().min(0).max(44_000).default(20_000),
  "prefix-cache-mb": z.coerce.number().min(0).max(2048).optional(),
  "sampler-engine": SamplerEngineSchema.optional(),
  faults: z.string().optional().transform((s, ctx) => {
    if (s === undefined) return undefined;
    try {
      return FaultConfigSchema.parse(JSON.parse(s));
    } catch (e) {
      ctx.addIssue({
        code: "custom",
        message: `not a valid fault config: ${(e as Error).message}`,
      });
      return z.NEVER;
    }
  }),
  log: z.boolean().default(false),
  "api-key": z.string().min(1).optional(),
  "ready-file": z.string().optional(),
});

await runCli(async () => {
  const flags = parseFlags(Deno.args, {
    port: { type: "string" },
    host: { type: "string" },
    "data-dir": { type: "string" },
    "long-poll-ms": { type: "string" },
    "prefix-cache-mb": { type: "string" },
    "sampler-engine": { type: "string" },
    faults: { type: "string" },
    log: { type: "boolean" },
    "api-key": { type: "string" },
    "ready-file": { type: "string" },
  }, Flags);
  const apiKey = flags["api-key"] ?? (Deno.env.get("TINKERBENCH_SERVE_API_KEY") || undefined);
  const server = await startLocalServer({
    port: flags.port,
    hostname: flags.host,
    dataDir: flags["data-dir"],
    longPollMs: flags["long-poll-ms"],
    prefixCacheBytes: flags["prefix-cache-mb"] === undefined
      ? undefined
      : Math.round(flags["prefix-cache-mb"] * 2 ** 20),
    samplerEngine: flags["sampler-engine"],
    faults: flags.faults,
    log: flags.log,
    auth: apiKey ? { apiKey } : undefined,
  });
  const models = server.backend.capabilities().supported_models.map((m) => m.model_name);
  console.log(
    `tinkerbench local backend listening on ${server.address}  (checkpoints in ` +
      `${flags["data-dir"]})`,
  );
  // Without --api-key the local backend takes any key: beyond loopback, anyone who reaches it
  // may train on it.
  const warning = openDoorWarning(
    flags.host,
    server.port,
    apiKey !== undefined,
    "--api-key KEY, or --host 127.0.0.1",
  );
  if (warning) console.warn(warning);
  console.log(`models: ${models.join(", ")}`);
  console.log(
    `use it:  TINKER_BASE_URL=${server.url} TINKER_API_KEY=${
      apiKey ? "<the key>" : "tml-local"
    } <your program>`,
  );
  await writeReadyFile(flags["ready-file"], server);
  const { promise: stop, resolve } = Promise.withResolvers<void>();
  Deno.addSignalListener("SIGINT", resolve);
  Deno.addSignalListener("SIGTERM", resolve);
  await stop;
  console.log("stopping…");
  await server.close();
}, { run: "deno task serve", about: ABOUT, usage: USAGE });
