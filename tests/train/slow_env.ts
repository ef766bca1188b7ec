/**
 * An environment module for the signal tests (`rollout.env_module`): `test:Slow-v0` takes a
 * moment per reset (`TB_SLOW_MS`, 300 ms) and step (`TB_SLOW_STEP_MS`, the same), and appends
 * what it is doing to `$TB_SIGNAL_MARKS`, so a test can send a signal in a known state: `rollout`
 * as a training episode's reset starts, `sampling` as it ends (the policy samples its answer
 * next), `stepping` as the environment takes the answer, `played` when a training episode ends,
 * `eval` for a held-out episode's reset.
 */

import { register } from "../../lib/envs/registry.ts";
import type { Env } from "../../lib/envs/types.ts";
import { isHeldOutEnvSeed } from "../../lib/util/random.ts";

const MARKS = Deno.env.get("TB_SIGNAL_MARKS");
const DELAY_MS = Number(Deno.env.get("TB_SLOW_MS") ?? "300");
const STEP_MS = Number(Deno.env.get("TB_SLOW_STEP_MS") ?? DELAY_MS);

function mark(what: string): void {
  if (MARKS) Deno.writeTextFileSync(MARKS, `${what}\n`, { append: true });
}

class Slow implements Env {
  readonly id = "test:Slow-v0";
  readonly maxTurns = 1;
  #heldOut = false;
  async reset(seed?: number) {
    this.#heldOut = seed !== undefined && isHeldOutEnvSeed(seed);
    mark(this.#heldOut ? "eval" : "rollout");
    await new Promise((r) => setTimeout(r, DELAY_MS));
    if (!this.#heldOut) mark("sampling");
    return { observation: "Write the letter a.", info: {} };
  }
  async step(action: string) {
    if (!this.#heldOut) mark("stepping");
    await new Promise((r) => setTimeout(r, STEP_MS));
    if (!this.#heldOut) mark("played");
    const share = action.length ? [...action].filter((c) => c === "a").length / action.length : 0;
    return { observation: "", reward: share, terminated: true, truncated: false, info: {} };
  }
  spawn(): Env {
    return new Slow();
  }
}

register("test:Slow-v0", () => new Slow());
