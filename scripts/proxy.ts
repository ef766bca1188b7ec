/**
 * `deno task proxy`: the OpenAI-compatible proxy without training. Serves a base model or
 * `tinker://` sampler weights and records every session's turns (capture, or chatting with a
 * checkpoint). `deno task train --source proxy` is the same server with training.
 */

import { z } from "zod";
import { parseFlags, runCli } from "../lib/cli/args.ts";
import { connectTinker } from "../lib/local/connect.ts";
import { defaultRecordDir, serveProxy } from "../lib/proxy/serve.ts";
import { DEFAULT_MODEL, ProxySchema } from "../lib/config/mod.ts";
import {
  ensurePortFree,
  openDoorWarning,
  READY_FILE_USAGE,
  writeReadyFile,
} from "../lib/http/mod.ts";

/** proxy.max_sessions' default: the flag's. */
const MAX_SESSIONS = ProxySchema.shape.max_sessions.parse(undefined);

const ABOUT =
  "Serves a base model or tinker:// sampler weights through an OpenAI-compatible API without " +
  "training, recording every session's turns (capture, or chatting with a checkpoint).";

const USAGE = `usage: deno task proxy [--model-name ${DEFAULT_MODEL}] [--model-path tinker://…]
                       [--proxy-host 0.0.0.0] [--proxy-port 30000] [--served-model-name NAME]
                       [--api-key KEY] [--default-turn-type main|side] [--session-idle-s 600]
                       [--session-binding token|history] [--max-sessions ${MAX_SESSIONS}] [--max-tokens 256]
                       [--truncate-keep-head N] [--record-dir DIR | --no-records]

  Serves POST /v1/chat/completions, POST /v1/responses (OpenAI Responses), POST
  /v1/messages (Anthropic Messages), GET /v1/models and GET /healthz. --api-key (or
  SGLANG_API_KEY) requires "Authorization: Bearer KEY". A session's first answer carries its
  X-Session-Token; later requests continue it by sending it back (--session-binding history: also
  by extending its conversation, for agents that cannot). At --max-sessions open sessions a
  request that would open one more is a 429. --truncate-keep-head N cuts a prompt over the
  model's context to its first N tokens and its newest ones (each cut recorded as
  truncated_tokens; without it, such a prompt is a 400 context_length_exceeded). Sessions' turns go to
  <record-dir>/conversations.jsonl (default ${defaultRecordDir()}). Ctrl-C stops.
  ${READY_FILE_USAGE}.`;

const Flags = z.object({
  "model-name": z.string().min(1).optional(),
  "model-path": z.string().startsWith("tinker://").optional(),
  "proxy-host": z.string().min(1).default("0.0.0.0"),
  "proxy-port": z.coerce.number().int().min(0).max(65535).default(30000),
  "served-model-name": z.string().min(1).optional(),
  "api-key": z.string().min(1).optional(),
  "default-turn-type": z.enum(["main", "side"]).default("main"),
  "session-idle-s": z.coerce.number().positive().default(600),
  "session-binding": z.enum(["token", "history"]).default("token"),
  // The range and default are proxy.max_sessions' (one place).
  "max-sessions": z.coerce.number().pipe(ProxySchema.shape.max_sessions.unwrap()).optional(),
  "max-tokens": z.coerce.number().int().min(1).default(256),
  // The range is proxy.truncate_keep_head's (one place).
  "truncate-keep-head": z.coerce.number().pipe(
    ProxySchema.shape.truncate_keep_head.unwrap().unwrap(),
  )
    .optional(),
  "record-dir": z.string().min(1).default(defaultRecordDir()),
  "no-records": z.boolean().default(false),
  "ready-file": z.string().optional(),
});

await runCli(async () => {
  const flags = parseFlags(Deno.args, {
    "model-name": { type: "string" },
    "model-path": { type: "string" },
    "proxy-host": { type: "string" },
    "proxy-port": { type: "string" },
    "served-model-name": { type: "string" },
    "api-key": { type: "string" },
    "default-turn-type": { type: "string" },
    "session-idle-s": { type: "string" },
    "session-binding": { type: "string" },
    "max-sessions": { type: "string" },
    "max-tokens": { type: "string" },
    "truncate-keep-head": { type: "string" },
    "record-dir": { type: "string" },
    "no-records": { type: "boolean" },
    "ready-file": { type: "string" },
  }, Flags);
  const apiKey = flags["api-key"] ?? Deno.env.get("SGLANG_API_KEY") ?? null;
  // Before the backend starts: a taken port is one line naming --proxy-port.
  ensurePortFree(flags["proxy-host"], flags["proxy-port"], "--proxy-port");
  const tinker = await connectTinker();
  try {
    const proxy = await serveProxy({
      service: tinker.service,
      model: flags["model-name"] ?? (flags["model-path"] ? undefined : DEFAULT_MODEL),
      modelPath: flags["model-path"],
      hostname: flags["proxy-host"],
      port: flags["proxy-port"],
      servedModelName: flags["served-model-name"],
      apiKey,
      defaultTurnType: flags["default-turn-type"],
      sessionIdleS: flags["session-idle-s"],
      sessionBinding: flags["session-binding"],
      maxSessions: flags["max-sessions"] ?? MAX_SESSIONS,
      defaultMaxTokens: flags["max-tokens"],
      truncateKeepHead: flags["truncate-keep-head"] ?? null,
      recordDir: flags["no-records"] ? null : flags["record-dir"],
    });
    console.log(
      `proxy: serving ${flags["model-path"] ?? proxy.model} as ${proxy.servedModelName}, ` +
        `listening on ${proxy.address} (clients here: ${proxy.url}; backend: ${tinker.backend})`,
    );
    const warning = openDoorWarning(
      flags["proxy-host"],
      proxy.port,
      apiKey !== null,
      "--api-key KEY, or --proxy-host 127.0.0.1",
    );
    if (warning) console.warn(warning);
    if (proxy.records) console.log(`records: ${proxy.records.conversationsPath}`);
    await writeReadyFile(flags["ready-file"], proxy);
    const { promise: stop, resolve } = Promise.withResolvers<void>();
    Deno.addSignalListener("SIGINT", resolve);
    Deno.addSignalListener("SIGTERM", resolve);
    await stop;
    console.log("stopping…");
    await proxy.close();
  } finally {
    await tinker.close();
  }
}, { run: "deno task proxy", about: ABOUT, usage: USAGE });
