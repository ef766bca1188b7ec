/**
 * The environment registry, with GEM's ids: `make("game:GuessTheNumber-v0-easy")`.
 *
 * @module
 */

import type { Env } from "./types.ts";
import { GuessTheNumber } from "./guess_the_number.ts";

const FACTORIES: Record<string, () => Env> = {
  "game:GuessTheNumber-v0-easy": () => new GuessTheNumber("easy"),
  "game:GuessTheNumber-v0-hard": () => new GuessTheNumber("hard"),
  "game:GuessTheNumber-v0-random": () => new GuessTheNumber("random"),
};

/** An id that is not registered. */
export class UnknownEnvError extends Error {
  override name = "UnknownEnvError";
}

/** The registered ids. */
export function listEnvs(): string[] {
  return Object.keys(FACTORIES);
}

/**
 * A new environment by id. Unknown ids are an error listing the known ones; GEM's README uses
 * the unregistered `game:GuessTheNumber-v0`, so that one gets a hint.
 */
export function make(id: string): Env {
  const factory = FACTORIES[id];
  if (factory) return factory();
  const close = listEnvs().filter((k) => k.startsWith(id));
  const hint = close.length ? ` Did you mean ${close.join(" or ")}?` : "";
  throw new UnknownEnvError(
    `unknown environment ${JSON.stringify(id)}.${hint} Known: ${listEnvs().join(", ")}`,
  );
}
