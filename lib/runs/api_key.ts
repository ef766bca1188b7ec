/**
 * The run API's key: made on the first start of `deno task runs` (unless `--no-auth`), kept in
 * the data directory readable by its owner only, and read from there by the clients on this
 * machine (the Hermes tools' client, `deno task mcp --url`), so that no web page or other user
 * can drive runs while the owner never has to copy a key around.
 *
 * @module
 */

import { join } from "node:path";
import { defaultDataDir } from "../local/server/data_dir.ts";

/** Where a data dir's run API key lives: `<dataDir>/runs-api/api-key`. */
export function runsKeyPath(dataDir: string = defaultDataDir()): string {
  return join(dataDir, "runs-api", "api-key");
}

/**
 * The data dir's key, made (random, 0600) if there is none yet; `created` says whether this
 * call made it (the server prints a new key once).
 */
export async function ensureRunsKey(
  dataDir: string,
): Promise<{ key: string; path: string; created: boolean }> {
  const path = runsKeyPath(dataDir);
  const existing = readRunsKey(dataDir);
  if (existing) return { key: existing, path, created: false };
  await Deno.mkdir(join(dataDir, "runs-api"), { recursive: true });
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  const key = `tbr-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
  try {
    await Deno.writeTextFile(path, key + "\n", { createNew: true, mode: 0o600 });
  } catch (e) {
    // Another server made it at the same moment: use that one.
    if (e instanceof Deno.errors.AlreadyExists) {
      return { key: readRunsKey(dataDir)!, path, created: false };
    }
    throw e;
  }
  return { key, path, created: true };
}

/** The data dir's key, or undefined when there is none (or it cannot be read). */
export function readRunsKey(dataDir: string = defaultDataDir()): string | undefined {
  try {
    return Deno.readTextFileSync(runsKeyPath(dataDir)).trim() || undefined;
  } catch {
    return undefined;
  }
}
