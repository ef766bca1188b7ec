/**
 * How a server process tells whoever started it where it listens, in one machine-readable
 * form: with `--ready-file PATH` it writes `{"listening": URL, "address": …, "pid": …}` to PATH
 * (whole, by rename) once it accepts connections. Benches and tests start servers with
 * {@link startServerProcess}, which waits for that file for a bounded time and fails with one
 * line naming the command, never hangs on a line of human output that changed wording.
 *
 * @module
 */

import type { HttpServer } from "./serve.ts";

/** What a ready file holds. */
export interface ReadyInfo {
  /** A base URL a client on this machine uses, e.g. `http://127.0.0.1:8000`. */
  listening: string;
  /** The address bound, e.g. `0.0.0.0:8000`. */
  address: string;
  /** The server process's id. */
  pid: number;
}

/** The `--ready-file` flag's line in a script's usage text. */
export const READY_FILE_USAGE =
  '--ready-file PATH writes {"listening": URL, "address", "pid"} to PATH once it listens ' +
  "(for scripts that start it)";

/**
 * Writes `server`'s ready file when `path` is given (write, then rename: a reader never sees
 * half of it).
 *
 * @example
 * await writeReadyFile(flags["ready-file"], server);
 */
export async function writeReadyFile(
  path: string | undefined,
  server: Pick<HttpServer, "url" | "address">,
): Promise<void> {
  if (!path) return;
  const info: ReadyInfo = { listening: server.url, address: server.address, pid: Deno.pid };
  const tmp = `${path}.${Deno.pid}.tmp`;
  await Deno.writeTextFile(tmp, JSON.stringify(info) + "\n");
  await Deno.rename(tmp, path);
}

/** Options of {@link startServerProcess}. */
export interface ServerProcessOptions {
  /** The script, e.g. `new URL("../scripts/serve.ts", import.meta.url).pathname`. */
  script: string;
  /** Its arguments (`--ready-file` is added). */
  args?: string[];
  /** Longest wait for the ready file (default 60 s). */
  timeoutMs?: number;
  /** Extra environment variables. */
  env?: Record<string, string>;
  /** Working directory of the process. */
  cwd?: string;
}

/** A server process started by {@link startServerProcess}. */
export interface ServerProcess extends ReadyInfo {
  /** The child process. */
  child: Deno.ChildProcess;
  /** Everything it printed so far (stdout and stderr, interleaved by arrival). */
  output(): string;
  /** Sends `signal` (default SIGTERM), waits for it to exit, and returns its exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
}

/**
 * Starts `deno run -A <script> <args> --ready-file <tmp>` and resolves once the server wrote
 * its ready file. If the process exits first, or `timeoutMs` passes, it is stopped and the
 * promise rejects with one line: the script, what happened and the last line it printed.
 *
 * @example
 * const server = await startServerProcess({ script: "scripts/serve.ts", args: ["--port", "0"] });
 * await fetch(`${server.listening}/api/v1/healthz`);
 * await server.stop();
 */
export async function startServerProcess(o: ServerProcessOptions): Promise<ServerProcess> {
  const dir = await Deno.makeTempDir({ prefix: "tb-ready-" });
  const readyPath = `${dir}/ready.json`;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", o.script, ...(o.args ?? []), "--ready-file", readyPath],
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
    env: { NO_COLOR: "1", ...o.env },
    cwd: o.cwd,
  }).spawn();
  let text = "";
  const drain = (s: ReadableStream<Uint8Array>) =>
    (async () => {
      for await (const chunk of s.pipeThrough(new TextDecoderStream())) text += chunk;
    })();
  const drained = Promise.all([drain(child.stdout), drain(child.stderr)]);
  let exited: number | undefined;
  const status = child.status.then((s) => (exited = s.code));
  const stop = async (signal: Deno.Signal = "SIGTERM") => {
    if (exited === undefined) {
      try {
        child.kill(signal);
      } catch { /* already gone */ }
    }
    await status;
    await drained;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    return exited!;
  };
  const timeoutMs = o.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  const name = o.script.split("/").pop();
  while (true) {
    try {
      const info = JSON.parse(await Deno.readTextFile(readyPath)) as ReadyInfo;
      return { ...info, child, output: () => text, stop };
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    if (exited !== undefined || Date.now() > deadline) {
      const why = exited !== undefined
        ? `exited with code ${exited}`
        : `did not report listening within ${timeoutMs / 1000} s`;
      if (exited === undefined) await stop("SIGKILL");
      else await drained;
      const last = text.trim().split("\n").at(-1) ?? "";
      throw new Error(`${name} ${why}${last ? `; its last line: ${last}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
