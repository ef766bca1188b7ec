/** `deno task train` as a user runs it, for the tests that drive it as a process. */

const SCRIPT = new URL("../../scripts/train.ts", import.meta.url).pathname;

/** Starts the train script with `args` on its own local backend home (no cloud key). */
export function train(
  args: string[],
  home: string,
  env: Record<string, string> = {},
): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SCRIPT, ...args],
    env: { TINKERBENCH_HOME: home, TINKER_API_KEY: "", NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** Waits for the process and decodes what it printed. */
export async function finish(
  p: Deno.ChildProcess,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await p.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}
