/**
 * One writer per run directory: the process that opens a run directory to write it holds
 * `run.lock` (its pid, start time and host) until it exits. A second trainer on the same
 * directory fails with one line naming the holder; a lock whose process is gone (killed, or
 * crashed without its exit handlers) is stale: it is named and taken over.
 *
 * @module
 */

import { hostname } from "node:os";
import { resolve } from "node:path";
import { z } from "zod";
import { isAlive, processStart } from "../util/process.ts";
import { runPath } from "./files.ts";

/** What `run.lock` holds: who writes the run directory. */
export const LockHolderSchema = z.object({
  pid: z.number().int().min(1),
  /** The process's start time (see `processStart`), so a reused pid is not taken for it. */
  start: z.string().nullable(),
  host: z.string(),
  /** When it took the lock. */
  since: z.string(),
});

/** Who writes a run directory. */
export type LockHolder = z.infer<typeof LockHolderSchema>;

/** The run directory is being written by another live process. */
export class RunDirLockedError extends Error {
  override name = "RunDirLockedError";
  /** The process that holds the lock. */
  readonly holder: LockHolder;

  constructor(dir: string, holder: LockHolder) {
    const where = holder.host === hostname() ? "" : ` on ${holder.host}`;
    super(
      `${dir} is being written by another trainer (pid ${holder.pid}${where}, since ` +
        `${holder.since}); stop that one, or give this run another --log-path`,
    );
    this.holder = holder;
  }
}

/** A held run-directory lock. */
export interface RunDirLock {
  dir: string;
  /** The dead process whose stale lock was taken over, when there was one. */
  tookOver: LockHolder | null;
  /** Gives the lock up (also done when the process exits). */
  release(): void;
}

/** Locks this process holds, by resolved directory: opening one again in-process reuses it. */
const held = new Map<string, RunDirLock>();
let exitHookInstalled = false;

/**
 * Takes the run directory's lock for this process, creating the directory if needed; opening it
 * again from the same process returns the lock it holds. Throws {@link RunDirLockedError} when
 * another live process holds it; takes over (and reports in `tookOver`) a lock whose process is
 * gone.
 *
 * @example
 * const lock = await lockRunDir(".tinkerbench/runs/demo");
 * if (lock.tookOver) console.warn(`took over the lock of pid ${lock.tookOver.pid} (not running)`);
 */
export async function lockRunDir(dir: string): Promise<RunDirLock> {
  const key = resolve(dir);
  const path = runPath(dir, "lock");
  const mine = held.get(key);
  if (mine && isOurs(readHolder(path))) return mine;
  held.delete(key);
  await Deno.mkdir(dir, { recursive: true });
  const me: LockHolder = {
    pid: Deno.pid,
    start: processStart(Deno.pid),
    host: hostname(),
    since: new Date().toISOString(),
  };
  let tookOver: LockHolder | null = null;
  // Each round either creates the lock, fails on a live holder, or removes a stale one; two
  // processes racing for a stale lock both come back here and only one creates it.
  for (let round = 0; round < 5; round++) {
    if (createLock(path, me)) {
      const lock: RunDirLock = {
        dir,
        tookOver,
        release: () => {
          if (held.get(key) !== lock) return;
          held.delete(key);
          if (isOurs(readHolder(path))) Deno.removeSync(path);
        },
      };
      held.set(key, lock);
      installExitHook();
      return lock;
    }
    const holder = await settledHolder(path);
    if (holder === "gone") continue;
    if (holder !== "unreadable") {
      if (isOurs(holder)) {
        Deno.removeSync(path); // ours from before (released without the registry): take anew
        continue;
      }
      if (holder.host !== hostname() || isAlive(holder.pid, holder.start)) {
        throw new RunDirLockedError(dir, holder);
      }
    }
    const stale = removeIfStill(path, holder);
    if (stale) tookOver = stale;
  }
  throw new Error(`${dir}: could not take ${runPath(".", "lock")} (it keeps changing hands)`);
}

function createLock(path: string, me: LockHolder): boolean {
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(path, { write: true, createNew: true });
  } catch (e) {
    if (e instanceof Deno.errors.AlreadyExists) return false;
    throw e;
  }
  try {
    const bytes = new TextEncoder().encode(JSON.stringify(me) + "\n");
    for (let at = 0; at < bytes.length;) at += file.writeSync(bytes.subarray(at));
    file.syncSync();
  } finally {
    file.close();
  }
  return true;
}

function readHolder(path: string): LockHolder | "gone" | "unreadable" {
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return "gone";
    throw e;
  }
  try {
    const parsed = LockHolderSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : "unreadable";
  } catch {
    return "unreadable";
  }
}

/** The holder, waiting briefly while a lock just created is still being written. */
async function settledHolder(path: string): Promise<LockHolder | "gone" | "unreadable"> {
  let holder = readHolder(path);
  for (let i = 0; i < 10 && holder === "unreadable"; i++) {
    await new Promise((r) => setTimeout(r, 20));
    holder = readHolder(path);
  }
  return holder;
}

function isOurs(h: LockHolder | "gone" | "unreadable"): boolean {
  return typeof h === "object" && h.pid === Deno.pid && h.host === hostname() &&
    h.start === processStart(Deno.pid);
}

/**
 * Removes a stale lock, unless it changed hands since it was read (another process took it over
 * first): the lock is moved aside, checked, and put back if it is no longer the stale one.
 */
function removeIfStill(
  path: string,
  stale: LockHolder | "unreadable",
): LockHolder | null {
  const aside = `${path}.${Deno.pid}.stale`;
  try {
    Deno.renameSync(path, aside);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  const now = readHolder(aside);
  const same = JSON.stringify(now) === JSON.stringify(stale);
  if (!same) {
    // Someone took it first: give theirs back (unless yet another lock appeared meanwhile).
    try {
      Deno.linkSync(aside, path);
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    }
  }
  Deno.removeSync(aside);
  return same && stale !== "unreadable" ? stale : null;
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // `unload` runs on a normal end and on Deno.exit; a killed process leaves a stale lock.
  globalThis.addEventListener("unload", () => {
    for (const lock of [...held.values()]) {
      try {
        lock.release();
      } catch {
        // the directory may be gone already (a test's temp dir)
      }
    }
  });
}
