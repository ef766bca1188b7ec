/**
 * Shared pieces of the runs API tests: the settings of a tiny training run, a bounded wait, and
 * the server run the way a user runs it (`deno task runs` as a process on a free port).
 *
 * @module
 */

import type { RunsApi } from "../../lib/runs/schemas.ts";
import { startServerProcess as startProcess } from "../../lib/http/mod.ts";

export { isAlive } from "../../lib/runs/process.ts";

/** A run of a few steps that each take well under a second: local/tiny, one group of two. */
export const TINY_RUN: Record<string, unknown> = {
  model_name: "local/tiny",
  batch_size: 1,
  group_size: 2,
  max_token_length: 8,
  lora_rank: 4,
  eval_episodes: 4,
  // local/tiny never answers GuessTheNumber in its format, so its runs train nothing; these
  // tests manage runs, so they must not stop as failed for that.
  max_steps_without_datums: 1000,
};

/** Selects GuessTheNumber-easy and applies `edits` through the API. */
export async function prepare(api: RunsApi, edits: Record<string, unknown>): Promise<void> {
  await api.selectEnvironment("game:GuessTheNumber-v0-easy");
  for (const [field, value] of Object.entries(edits)) await api.editConfig(field, value);
}

/** Polls `check` until it returns a value (not undefined), at most `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 120_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await check();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
}

const SCRIPT = new URL("../../scripts/runs.ts", import.meta.url).pathname;

/** `deno task runs` as a process. */
export interface ServerProcess {
  url: string;
  pid: number;
  /** Everything it printed so far. */
  output(): string;
  /** Ctrl-C, then waits for it to exit; its exit code. */
  interrupt(): Promise<number>;
  /** kill -9, then waits for it to exit. */
  kill(): Promise<void>;
}

/** Starts `deno task runs --port 0` on a data dir and waits for its ready file. */
export async function startServerProcess(
  dataDir: string,
  args: string[] = [],
): Promise<ServerProcess> {
  const p = await startProcess({
    script: SCRIPT,
    args: ["--port", "0", "--data-dir", dataDir, ...args],
    env: { TINKER_API_KEY: "" },
  });
  return {
    url: p.listening,
    pid: p.pid,
    output: p.output,
    interrupt: () => p.stop("SIGINT"),
    kill: async () => {
      await p.stop("SIGKILL");
    },
  };
}
