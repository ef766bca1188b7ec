/**
 * `deno task train --source proxy` as a user runs it, for tests: a subprocess on the local
 * backend whose proxy listens on a free port of 127.0.0.1, found from the line the run prints.
 *
 * @module
 */

const ROOT = new URL("../../", import.meta.url).pathname;

export interface Train {
  child: Deno.ChildProcess;
  /** The proxy's URL, once it listens. */
  url: Promise<string>;
  /** Everything printed, once the process has ended. */
  output: Promise<{ code: number; stdout: string; stderr: string }>;
}

/** Starts `deno task train` with `args`; its proxy listens on a free port. */
export function train(
  args: string[],
  home: string,
  env: Record<string, string> = {},
): Train {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "scripts/train.ts",
      "--source",
      "proxy",
      "--proxy-host",
      "127.0.0.1",
      "--proxy-port",
      "0",
      ...args,
    ],
    cwd: ROOT,
    env: { TINKERBENCH_HOME: home, NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const { promise: url, resolve } = Promise.withResolvers<string>();
  let stdout = "";
  const readOut = (async () => {
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      stdout += chunk;
      const m = /proxy: serving \S+, listening on 127\.0\.0\.1:\d+ \(clients here: (\S+)\)/.exec(
        stdout,
      );
      if (m) resolve(m[1]);
    }
  })();
  const stderr = new Response(child.stderr).text();
  const output = (async () => {
    const status = await child.status;
    await readOut;
    resolve("");
    return { code: status.code, stdout, stderr: await stderr };
  })();
  return { child, url, output };
}
