/**
 * A process's identity: its pid and its start time (Linux `/proc`), so a pid the system reused
 * for another program is never mistaken for the process that recorded it (a run API's training
 * process, a run directory's writer).
 *
 * @module
 */

import process from "node:process";

/**
 * When a process started, as the kernel's clock ticks since boot (field 22 of /proc/PID/stat),
 * or null where /proc is not available.
 */
export function processStart(pid: number): string | null {
  const stat = readStat(pid);
  return stat ? stat[19] ?? null : null;
}

/**
 * Whether the process `pid` (with start time `start`, when known) is still running. Without
 * /proc (macOS), whether a process of that pid exists at all.
 */
export function isAlive(pid: number, start: string | null): boolean {
  const stat = readStat(pid);
  if (stat === null) return readStat(Deno.pid) === null && pidExists(pid);
  // A zombie has exited; it only waits for its parent to read its status.
  if (stat[0] === "Z" || stat[0] === "X") return false;
  return start === null || stat[19] === start;
}

function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0); // signal 0: the existence check, nothing is sent
    return true;
  } catch (e) {
    // EPERM: it exists, as another user's process.
    return (e as { code?: string }).code === "EPERM";
  }
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
