/**
 * The few things the client needs from its runtime, written with `node:` built-ins that Deno,
 * Node (>= 20) and Bun all provide, so the same source runs (and is packaged, packages/tinker)
 * for each: environment variables, a timer that does not keep the process alive, and a shell
 * command's output.
 *
 * @module
 */

import { execFile } from "node:child_process";
import process from "node:process";

/** An environment variable, or undefined (Deno asks for --allow-env, as for `Deno.env`). */
export function envVar(name: string): string | undefined {
  return process.env[name];
}

/** Lets the process exit while `timer` is pending (a background refresh or heartbeat). */
export function unrefTimer(timer: ReturnType<typeof setTimeout> | undefined): void {
  if (timer === undefined) return;
  const t = timer as unknown as { unref?: () => void };
  if (typeof t === "object" && typeof t.unref === "function") t.unref();
  else {(globalThis as { Deno?: { unrefTimer(id: number): void } }).Deno?.unrefTimer(
      timer as unknown as number,
    );}
}

/** Runs `cmd` with `sh -c`: its exit code and output. */
export function runShell(cmd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("sh", ["-c", cmd], (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}
