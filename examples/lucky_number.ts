/**
 * A text environment: guess my lucky number. docs/tutorial.md writes it step by step. Train on it:
 * `deno task train --env-module examples/lucky_number.ts --env-id my:LuckyNumber-v0 --group-size 8 --max-steps 30`
 */

import { type Env, lastBoxedInteger, register, type StepResult } from "../mod.ts";

const LUCKY = 7;

class LuckyNumber implements Env {
  readonly id = "my:LuckyNumber-v0";
  readonly maxTurns = 1;

  reset(_seed?: number) {
    const observation = "You are playing Lucky Number. " +
      "I am thinking of an integer between 1 and 10 (inclusive). Give your guess as \\boxed{N}.";
    return { observation, info: {} };
  }

  step(action: string): StepResult {
    const guess = lastBoxedInteger(action);
    // Partial credit: the closer the guess, the higher the reward; 1 only for the lucky number.
    const reward = guess === null ? 0 : Math.max(0, 1 - Math.abs(guess - LUCKY) / 9);
    return {
      observation: `My lucky number is ${LUCKY}.`,
      reward,
      terminated: true,
      truncated: false,
      info: { guess },
    };
  }

  spawn() {
    return new LuckyNumber();
  }
}

register("my:LuckyNumber-v0", () => new LuckyNumber());
