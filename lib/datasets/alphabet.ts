/**
 * A toy supervised dataset for the local byte-level models: continue the alphabet
 * ("klm" → "nopqrs"). Small enough that LoRA on `local/tiny` learns it in seconds, and easy
 * to read when checking that training did something.
 *
 * @module
 */

import type { Rng } from "../util/random.ts";
import type { PromptCompletion } from "./types.ts";

const A = "a".charCodeAt(0);

/** The `n` letters after `start`, wrapping from z to a. */
export function alphabetRun(start: number, n: number): string {
  return Array.from({ length: n }, (_, i) => String.fromCharCode(A + (start + i) % 26)).join("");
}

/** `count` examples: three letters as the prompt, the next `answerLength` as the completion. */
export function alphabetExamples(rng: Rng, count: number, answerLength = 6): PromptCompletion[] {
  return Array.from({ length: count }, () => {
    const start = rng.int(26);
    return {
      prompt: alphabetRun(start, 3),
      completion: alphabetRun(start + 3, answerLength) + "\n",
    };
  });
}
