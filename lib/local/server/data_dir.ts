/**
 * Where the local backend keeps its data (checkpoints, and the run API's records and key),
 * in a file of its own so that light clients can find it without loading the backend.
 *
 * @module
 */

import { join } from "node:path";
import { homedir } from "node:os";

/** The default data directory: `$TINKERBENCH_HOME` or `~/.cache/tinkerbench/local`. */
export function defaultDataDir(): string {
  return Deno.env.get("TINKERBENCH_HOME") ?? join(homedir(), ".cache", "tinkerbench", "local");
}
