/**
 * The policy the proxy serves: a sampler and its version (the training step its weights are
 * from), swapped in after every training step while requests keep flowing. Each request takes
 * the sampler current when it starts, so a turn records the version that really produced it.
 *
 * The OpenClaw seed's alternative, pausing submissions while a step runs, is {@link pause}:
 * requests arriving meanwhile wait, and get a 503 when the pause outlasts the timeout.
 *
 * @module
 */

import type { Sampler } from "../rollout/mod.ts";
import { ProxyError } from "./errors.ts";

/** A sampler and the version of its weights. */
export interface PolicyVersion {
  sampler: Sampler;
  version: number;
}

/**
 * The served policy.
 *
 * @example
 * const policy = new Policy(await training.saveWeightsAndGetSamplingClient(), 0);
 * // after a training step:
 * policy.swap(nextSampler, 1);
 */
export class Policy {
  #current: PolicyVersion;
  #paused: PromiseWithResolvers<void> | null = null;
  #stopping = false;

  constructor(sampler: Sampler, version = 0) {
    this.#current = { sampler, version };
  }

  /** The version being served. */
  get version(): number {
    return this.#current.version;
  }

  /** Whether submissions are paused. */
  get paused(): boolean {
    return this.#paused !== null;
  }

  /** The sampler and version served now. */
  current(): PolicyVersion {
    return this.#current;
  }

  /** Serves new weights from now on (requests already sampling finish on the old ones). */
  swap(sampler: Sampler, version: number): void {
    this.#current = { sampler, version };
  }

  /** Whether the run is stopping ({@link stop}). */
  get stopping(): boolean {
    return this.#stopping;
  }

  /**
   * The run is stopping (Ctrl-C, SIGTERM): new requests get a 503, and a request whose sampling
   * fails from now on (its backend drops queued samples) says why in a 503 too.
   */
  stop(): void {
    this.#stopping = true;
    this.resume();
  }

  /** Holds new requests until {@link resume} (the seed's pause-and-503 mode). */
  pause(): void {
    this.#paused ??= Promise.withResolvers<void>();
  }

  /** Lets held and new requests through. */
  resume(): void {
    this.#paused?.resolve();
    this.#paused = null;
  }

  /**
   * The sampler for a request: at once, or once a pause ends; a 503 when the pause lasts
   * longer than `timeoutMs`.
   */
  async acquire(timeoutMs: number): Promise<PolicyVersion> {
    while (this.#paused) {
      const gate = this.#paused.promise;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), timeoutMs);
      });
      const r = await Promise.race([gate.then(() => "open" as const), timedOut]);
      clearTimeout(timer);
      if (r === "timeout") {
        throw new ProxyError(
          503,
          `submissions are paused while a training step runs, for more than ${
            Math.round(timeoutMs / 1000)
          } s; retry later`,
          { code: "submission_paused", retryAfterS: 5 },
        );
      }
    }
    if (this.#stopping) throw stoppingError();
    return this.#current;
  }
}

/** The answer to a turn the proxy cannot serve because its run is stopping. */
export function stoppingError(): ProxyError {
  return new ProxyError(
    503,
    "shutting down: the training run is stopping (Ctrl-C or SIGTERM) and serves no more turns",
    { code: "shutting_down" },
  );
}
