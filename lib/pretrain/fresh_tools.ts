/**
 * Fresh tools: the unseen tools' task (`unseen_tools.ts`) with every tool and argument name made
 * up anew for each task, so that copying from the context is the only way to the asked call.
 *
 * Why: the unseen tools draw their names from 24 verbs and 24 nouns. `local/tools` learned that
 * small set's prior instead of copying (greedy, it named no declared tool in 64 tasks): a
 * memorised common name lowered the loss more than finding the asked tool among the
 * declarations. Here a name joins one to three pieces (words of every pool, or random letters)
 * in a new combination every time, and one to four tools are declared, the asked one drawn
 * among them: no name can be guessed, only read. The pieces recur across tasks, so the model
 * can still learn which token of the request (` fetch`, with its space) is which token of the
 * declaration and the call (`fetch`, after `"`).
 *
 * @module
 */

import { Rng } from "../util/random.ts";
import {
  madeUpLetters,
  NOUNS,
  toolTask,
  UnseenToolsEnv,
  type UnseenToolTask,
  VALUE_WORDS,
  VERBS,
} from "./unseen_tools.ts";

/** Registry-style id of the fresh-tools environment (pretraining only). */
export const FRESH_TOOLS_ID = "synthetic:FreshTools-v0";

const PIECES: readonly string[] = [...new Set([...VERBS, ...NOUNS, ...VALUE_WORDS])];

/** One piece of a name: a word of the pools, or two to seven random letters. */
function piece(rng: Rng): string {
  if (rng.uniform() < 0.6) return PIECES[rng.int(PIECES.length)];
  return madeUpLetters(rng, 2, 7);
}

/** A made-up name: one to three pieces, joined by `_` (or, in a tenth, run together). */
export function freshIdentifier(rng: Rng): string {
  const u = rng.uniform();
  const n = u < 0.4 ? 1 : u < 0.85 ? 2 : 3;
  const parts = Array.from({ length: n }, () => piece(rng));
  return parts.join(rng.uniform() < 0.1 ? "" : "_");
}

/**
 * The task of a seed: one to four tools (mostly several) named by {@link freshIdentifier},
 * their arguments too, and a request for one to three calls.
 *
 * @example
 * const task = generateFreshToolTask(3);
 * task.tools.some((t) => t.name === task.calls[0].name); // true
 */
export function generateFreshToolTask(seed: number): UnseenToolTask {
  const rng = new Rng(seed);
  const n = [1, 2, 2, 3, 3, 4][rng.int(6)];
  // More asked calls than the unseen tools: each one more copy for a few tokens more.
  return toolTask(rng, n, () => freshIdentifier(rng), () => [1, 1, 2, 2, 3][rng.int(5)]);
}

/** A fresh-tools environment (the unseen tools' environment over fresh names). */
export function freshToolsEnv(): UnseenToolsEnv {
  return new UnseenToolsEnv(FRESH_TOOLS_ID, generateFreshToolTask);
}
