/**
 * Training runs as child processes: `deno task train`'s own script on the run's config file, in
 * a session of its own (so a Ctrl-C meant for the server never reaches it, and it outlives a
 * server that stops or crashes), its output appended to `train.log` in the run directory.
 * A process is known by its pid and its start time, so a pid the system reused for something
 * else is never mistaken for a run after a server restart (Linux `/proc`).
 *
 * @module
 */

import { fileURLToPath as fromFileUrl } from "node:url";

const TRAIN_SCRIPT = fromFileUrl(new URL("../../scripts/train.ts", import.meta.url));
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

/** The command that trains (or resumes) a run from its config file. */
export function trainingCommand(configPath: string): string[] {
  return [
    Deno.execPath(),
    "run",
    "-A",
    "--config",
    DENO_JSON,
    TRAIN_SCRIPT,
    "--config-path",
    configPath,
  ];
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

/**
 * When a process started, as the kernel's clock ticks since boot (field 22 of /proc/PID/stat),
 * or null where /proc is not available.
 */
export function processStart(pid: number): string | null {
  const stat = readStat(pid);
  return stat ? stat[19] ?? null : null;
}

/** Whether the process `pid` (with start time `start`, when known) is still running. */
export function isAlive(pid: number, start: string | null): boolean {
  const stat = readStat(pid);
  if (stat === null) return false;
  // A zombie has exited; it only waits for its parent to read its status.
  if (stat[0] === "Z" || stat[0] === "X") return false;
  return start === null || stat[19] === start;
}

/** Fields of /proc/PID/stat after the command name (state first), or null. */
function readStat(pid: number): string[] | null {
  let text: string;
  try {
    text = Deno.readTextFileSync(`/proc/${pid}/stat`);
  } catch {
    return null;
  }
  // The command name is in parentheses and may itself contain spaces or parentheses.
  return text.slice(text.lastIndexOf(")") + 2).trim().split(" ");
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
