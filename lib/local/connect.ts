/**
 * One way to get a Tinker session: the Tinker cloud when `TINKER_API_KEY` is set, otherwise
 * the embedded local backend, started in-process on a free port. Scripts, notebooks and the
 * trainer all start here, so a run that works locally works unchanged on the cloud.
 *
 * @module
 */

import { ServiceClient } from "../tinker/mod.ts";
import { getTokenizer } from "../tokenizers/mod.ts";

/** A connected session and where it runs. */
export interface TinkerConnection {
  /** The session on the backend. */
  service: ServiceClient;
  /** `local` (embedded backend) or `cloud` (TINKER_API_KEY). */
  backend: "local" | "cloud";
  /** The server's URL. */
  url: string;
  /** Closes the session and, for the local backend, stops the server. */
  close(): Promise<void>;
  /**
   * The run is stopping (Ctrl-C, SIGTERM): the local backend drops the sample requests queued
   * for it, so its last step and checkpoint run next. The cloud's queue is not ours: a no-op.
   */
  stopSampling(reason: string): void;
}

/**
 * Connects to the Tinker cloud (with `TINKER_API_KEY`) or starts the local backend.
 *
 * @example
 * const tinker = await connectTinker();
 * const training = await tinker.service.createLoraTrainingClient({ baseModel: "local/tiny" });
 * await tinker.close();
 */
export async function connectTinker(
  { dataDir, apiKey = Deno.env.get("TINKER_API_KEY") }: { dataDir?: string; apiKey?: string } = {},
): Promise<TinkerConnection> {
  if (apiKey) {
    const service = await ServiceClient.connect({ apiKey, tokenizers: getTokenizer });
    return {
      service,
      backend: "cloud",
      url: service.http.baseUrl,
      close: () => Promise.resolve(service.close()),
      stopSampling: () => {},
    };
  }
  // Imported lazily so that cloud runs never load the local engine.
  const { startLocalServer } = await import("./server/mod.ts");
  const server = await startLocalServer({ dataDir });
  const service = await ServiceClient.connect({
    baseUrl: server.url,
    apiKey: "tml-local",
    tokenizers: getTokenizer,
  });
  return {
    service,
    backend: "local",
    url: server.url,
    async close() {
      service.close();
      await server.close();
    },
    stopSampling: (reason) => void server.backend.stopSampling(reason),
  };
}
