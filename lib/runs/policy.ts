/**
 * Using a policy from the server: the selected environment's base model or a run's checkpoint,
 * sampled through the Tinker API (the local backend unless TINKER_API_KEY is set). Each job
 * opens its own connection and closes it, so the models it loads are freed with it and the
 * server's memory does not grow with the number of checkpoints it has looked at.
 *
 * @module
 */

import { connectTinker } from "../local/connect.ts";
import type { SamplingClient, ServiceClient } from "../tinker/mod.ts";
import type { CheckpointRecord } from "../rundir/mod.ts";

/** Which weights to sample from. */
export type PolicySource =
  | { baseModel: string }
  | { checkpoint: Pick<CheckpointRecord, "state_path" | "sampler_path"> };

/** Runs `fn` with a sampling client on `from`, on a connection of its own. */
export async function withPolicy<T>(
  dataDir: string,
  from: PolicySource,
  fn: (sampler: SamplingClient, service: ServiceClient) => Promise<T>,
): Promise<T> {
  const tinker = await connectTinker({ dataDir });
  try {
    return await fn(await samplerFor(tinker.service, from), tinker.service);
  } finally {
    await tinker.close();
  }
}

async function samplerFor(service: ServiceClient, from: PolicySource): Promise<SamplingClient> {
  if ("baseModel" in from) return await service.createSamplingClient({ baseModel: from.baseModel });
  const { sampler_path, state_path } = from.checkpoint;
  if (sampler_path) return await service.createSamplingClient({ modelPath: sampler_path });
  // Periodic and interrupted checkpoints keep training state only: load it, then snapshot.
  const training = await service.createTrainingClientFromState(state_path);
  return await training.saveWeightsAndGetSamplingClient().result();
}
