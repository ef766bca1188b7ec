/**
 * The proxy without training (`deno task proxy`): serves a base model or `tinker://` sampler
 * weights through the OpenAI API and records every session's turns, for capture (data to train
 * on later) and for chatting with a checkpoint.
 *
 * @module
 */

import { join } from "node:path";
import { getRenderer } from "../renderers/mod.ts";
import { prepareTokenizer } from "../tokenizers/mod.ts";
import type { ServiceClient } from "../tinker/mod.ts";
import type { TurnType } from "./metadata.ts";
import { Policy } from "./policy.ts";
import { ProxyRecords, servedRecord, turnRecord } from "./records.ts";
import { type RunningProxy, startProxy } from "./server.ts";
import type { SessionBinding } from "./session_types.ts";

/** Options of {@link serveProxy}. */
export interface ServeProxyOptions {
  service: ServiceClient;
  /** The base model (with `modelPath`: the weights' base model, found when not given). */
  model?: string;
  /** `tinker://…/sampler_weights/…` weights to serve instead of the base model. */
  modelPath?: string;
  hostname: string;
  port: number;
  servedModelName?: string | null;
  apiKey?: string | null;
  defaultTurnType?: TurnType;
  sessionIdleS?: number | null;
  /** How requests without a session's token may continue it (default `token`). */
  sessionBinding?: SessionBinding;
  /** Most open sessions; a request that would open one more is a 429. */
  maxSessions?: number | null;
  /** Where `conversations.jsonl` goes; null: nothing is recorded. */
  recordDir: string | null;
  /** Completion tokens when a request gives no limit. */
  defaultMaxTokens?: number;
  /** Opt-in cut of prompts over the context (`proxy.truncate_keep_head`); null: none. */
  truncateKeepHead?: number | null;
}

/** A serving proxy and where it records. */
export interface ServingProxy extends RunningProxy {
  model: string;
  records: ProxyRecords | null;
}

/**
 * Starts serving.
 *
 * @example
 * const proxy = await serveProxy({ service, model: "local/games", hostname: "127.0.0.1",
 *   port: 30000, recordDir: "records" });
 */
export async function serveProxy(o: ServeProxyOptions): Promise<ServingProxy> {
  let model = o.model;
  if (o.modelPath && !model) {
    model = (await o.service.restClient().weightsInfo(o.modelPath)).base_model;
  }
  if (!model) throw new Error("serveProxy: give a model or a tinker:// model path");
  // The model's tokenizer files are fetched from the hub at first use (a no-op when here).
  await prepareTokenizer(model);
  const renderer = getRenderer(model);
  const sampler = o.modelPath
    ? await o.service.createSamplingClient({ modelPath: o.modelPath })
    : await o.service.createSamplingClient({ baseModel: model });
  const records = o.recordDir === null ? null : await ProxyRecords.open(o.recordDir, null);
  const proxy = await startProxy({
    policy: new Policy(sampler, 0),
    renderer,
    modelName: model,
    servedModelName: o.servedModelName,
    apiKey: o.apiKey,
    contextLength: await o.service.contextLength(model),
    defaultTurnType: o.defaultTurnType,
    sessionIdleS: o.sessionIdleS,
    sessionBinding: o.sessionBinding,
    maxSessions: o.maxSessions,
    defaultMaxTokens: o.defaultMaxTokens,
    truncateKeepHead: o.truncateKeepHead ?? null,
    hostname: o.hostname,
    port: o.port,
    onComplete: (t) => void records?.conversation(turnRecord(t, { status: "recorded" })),
    onServed: (s) => {
      if (s.turnType === "side") void records?.conversation(servedRecord(s));
    },
    onSessionEnd: (e) => void records?.session(e),
  });
  return {
    ...proxy,
    model,
    records,
    async close() {
      await proxy.close();
      await records?.flush();
    },
  };
}

/** The records directory of a proxy session without training. */
export const defaultRecordDir = (): string => join(".tinkerbench", "proxy", "records");
