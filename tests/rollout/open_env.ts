/**
 * A test environment that takes any text and goes on, rewarding nothing, for `maxTurns` turns:
 * episodes whose length is set by the test, not by what the sampler writes.
 *
 * @module
 */

import type { Env, StepResult } from "../../lib/envs/types.ts";

/** Takes any text and goes on, for `maxTurns` turns. */
export class OpenEnv implements Env {
  readonly id = "test:Open-v0";
  constructor(readonly maxTurns: number) {}
  reset() {
    return { observation: "Say anything.", info: {} };
  }
  step(): StepResult {
    return { observation: "Go on.", reward: 0, terminated: false, truncated: false, info: {} };
  }
  spawn(): Env {
    return new OpenEnv(this.maxTurns);
  }
}
