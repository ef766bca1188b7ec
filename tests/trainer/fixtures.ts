/** Shared setup of the trainer tests: a local backend per test, small configs. */

import { startLocalServer } from "../../lib/local/server/mod.ts";
import { ServiceClient } from "../../lib/tinker/mod.ts";
import { loadTrainConfig, type TrainConfig } from "../../lib/config/mod.ts";

/** A tiny model on the one-turn debug task; `over` sets any other setting by alias. */
export async function tinyConfig(over: Record<string, unknown>): Promise<TrainConfig> {
  return await loadTrainConfig({
    flags: {
      model_name: "local/tiny",
      env_id: "debug:EvenFirstByte-v0",
      max_tokens: 8,
      batch_size: 4,
      group_size: 4,
      learning_rate: 1e-2,
      lora_rank: 4,
      seed: 3,
      ...over,
    },
  });
}

/** Runs `fn` against a fresh local backend, closed afterwards. */
export async function withService<T>(fn: (s: ServiceClient) => Promise<T>): Promise<T> {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-trainer-" });
  const server = await startLocalServer({ dataDir });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  try {
    return await fn(service);
  } finally {
    service.close();
    await server.close();
  }
}
