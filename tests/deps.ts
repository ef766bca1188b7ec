/**
 * Packages only one test needs, installed by that test into a folder of their own outside the
 * repository (`TB_TEST_DEPS_DIR`, default `~/.cache/tinkerbench/test-deps/<name>/`), so the
 * project's `node_modules` stays lean. `tests/deps/<name>.json` is the set's deno.json (imports
 * pinned) and `tests/deps/<name>.lock` its deno.lock: the install is `deno install --frozen`,
 * pruned of other systems' native code as setup.sh prunes the project's (scripts/prune_install.ts).
 * A test runs its helper script with `deno run --config <that folder>/deno.json`.
 *
 * @module
 */

import { join } from "node:path";
import { pruneInstall } from "../scripts/prune_install.ts";

/** Where the sets are installed. */
export const TEST_DEPS_DIR: string = Deno.env.get("TB_TEST_DEPS_DIR") ??
  join(Deno.env.get("HOME") ?? "/tmp", ".cache", "tinkerbench", "test-deps");

const HERE = new URL("./deps/", import.meta.url).pathname;

/**
 * Installs the set `name` (once: an unchanged set is found as it is) and returns the path of its
 * deno.json, for `deno run --config`. Throws with npm's or Deno's own message when it fails.
 */
export async function installTestDeps(name: string): Promise<string> {
  const dir = join(TEST_DEPS_DIR, name);
  const config = await Deno.readTextFile(join(HERE, `${name}.json`));
  const lock = await Deno.readTextFile(join(HERE, `${name}.lock`));
  const stamp = join(dir, "installed");
  const want = `${config}\n${lock}`;
  const have = await Deno.readTextFile(stamp).catch(() => "");
  if (have === want) return join(dir, "deno.json");
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(join(dir, "deno.json"), config);
  await Deno.writeTextFile(join(dir, "deno.lock"), lock);
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["install", "--frozen", "--quiet"],
    cwd: dir,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`installing ${name}'s test packages: ${new TextDecoder().decode(out.stderr)}`);
  }
  pruneInstall(dir);
  await Deno.writeTextFile(stamp, want);
  return join(dir, "deno.json");
}
