/**
 * Training runs as child processes: what `deno task train` runs (the `train` task of the
 * project's deno.json, so this library names no script of its own callers) on the run's config
 * file, in a session of its own (so a Ctrl-C meant for the server never reaches it, and it outlives a
 * server that stops or crashes), its output appended to `train.log` in the run directory.
 * A process is known by its pid and its start time, so a pid the system reused for something
 * else is never mistaken for a run after a server restart (Linux `/proc`).
 *
 * @module
 */

import { fileURLToPath as fromFileUrl } from "node:url";
import { resolve } from "node:path";
import { isAlive, processStart } from "../util/process.ts";

export { isAlive, processStart };

const DENO_JSON = fromFileUrl(new URL("../../deno.json", import.meta.url));
const REPO = fromFileUrl(new URL("../../", import.meta.url));

/**
 * Variables that `deno task train` reads as settings: the run's config file must be its only
 * source, so the server's own environment cannot change a run behind the agent's back.
 */
function isSettingVariable(name: string): boolean {
  if (name === "TINKERBENCH_HOME") return false;
  return name.startsWith("TINKERBENCH_") || name.startsWith("OPENCLAW_") ||
    name === "KL_LOSS_COEF";
}

/**
 * The command that trains (or resumes) a run from its config file: the `train` task of
 * deno.json (`deno run [flags] SCRIPT`), run directly rather than through `deno task`, so the
 * process started is the trainer itself (its pid is the one to signal and to watch).
 */
export function trainingCommand(configPath: string): string[] {
  return [...trainTask(), "--config-path", configPath];
}

let cachedTask: string[] | null = null;

function trainTask(): string[] {
  if (cachedTask) return cachedTask;
  const tasks = (JSON.parse(Deno.readTextFileSync(DENO_JSON)) as {
    tasks?: Record<string, string | { command?: string }>;
  }).tasks ?? {};
  const task = tasks.train;
  const command = typeof task === "string" ? task : task?.command ?? "";
  const words = command.trim().split(/\s+/);
  // `deno run <flags> <script>`: anything else (pipes, env settings) cannot be run directly.
  if (words[0] !== "deno" || words[1] !== "run" || !/\.ts$/.test(words.at(-1) ?? "")) {
    throw new Error(
      `deno.json's train task is not "deno run [flags] SCRIPT.ts" (it is ${
        JSON.stringify(command)
      }); the runs server cannot start it`,
    );
  }
  const flags = words.slice(2, -1);
  cachedTask = [
    Deno.execPath(),
    "run",
    ...flags,
    "--config",
    DENO_JSON,
    resolve(REPO, words.at(-1)!),
  ];
  return cachedTask;
}

/** A started training process. */
export interface TrainingProcess {
  pid: number;
  /** Its start time (see {@link processStart}). */
  start: string | null;
  /** Resolves with the exit code (null when killed by a signal) once it ends. */
  exited: Promise<number | null>;
}

/**
 * Starts a training process. `dataDir` becomes its `TINKERBENCH_HOME`, so its checkpoints land
 * where the server (and a resumed process) can read them.
 */
export function spawnTraining(
  o: { configPath: string; logFile: string; dataDir: string },
): TrainingProcess {
  const env = Object.fromEntries(
    Object.entries(Deno.env.toObject()).filter(([k]) => !isSettingVariable(k)),
  );
  // `sh` only opens the log and then becomes the trainer (exec), so the pid is the trainer's.
  const child = new Deno.Command("sh", {
    args: [
      "-c",
      'log=$1; shift; exec "$@" >>"$log" 2>&1',
      "sh",
      o.logFile,
      ...trainingCommand(o.configPath),
    ],
    cwd: REPO,
    clearEnv: true,
    env: { ...env, TINKERBENCH_HOME: o.dataDir, NO_COLOR: "1" },
    stdin: "null",
    stdout: "null",
    stderr: "null",
    detached: true,
  }).spawn();
  child.unref(); // the server may exit while the run goes on
  return {
    pid: child.pid,
    start: processStart(child.pid),
    exited: child.status.then((s) => (s.signal === null ? s.code : null)),
  };
}

/** Sends a signal to a run's process; false when it is already gone. */
export function signalProcess(pid: number, signal: "SIGINT" | "SIGKILL"): boolean {
  try {
    Deno.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** This process's identity, for the data dir's lease. */
export function selfIdentity(): { pid: number; start: string | null } {
  return { pid: Deno.pid, start: processStart(Deno.pid) };
}
