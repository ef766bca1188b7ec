/**
 * `debug:EvenFirstByte-v0`: a one-turn task that a random model solves about half the time (the
 * reply's first byte is even), so every group has mixed rewards and every step trains on a real
 * advantage: the quickest check that a training setup learns (tests, the pipeline benchmark).
 *
 * @module
 */

import type { StepResult, SyncEnv } from "./types.ts";

/** Reward 1 when the action's first UTF-8 byte is even, else 0; one turn. */
export class EvenFirstByte implements SyncEnv {
  readonly id = "debug:EvenFirstByte-v0";
  readonly maxTurns = 1;

  reset(): { observation: string; info: Record<string, unknown> } {
    return { observation: "Say anything.", info: {} };
  }

  step(action: string): StepResult {
    const even = new TextEncoder().encode(action)[0] % 2 === 0;
    return {
      observation: even ? "Even." : "Odd.",
      reward: even ? 1 : 0,
      terminated: true,
      truncated: false,
      info: {},
    };
  }

  spawn(): EvenFirstByte {
    return new EvenFirstByte();
  }
}
