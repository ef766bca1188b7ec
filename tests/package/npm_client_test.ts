/**
 * The Tinker client's npm package (packages/tinker), as a Node user gets it: built from
 * lib/tinker, packed with `npm pack`, installed into a scratch Node project, type-checked there
 * (strict, `nodenext`), and run by Node's own test runner against `deno task serve`: it trains
 * two steps, saves, samples and lists the run.
 */

import { join } from "node:path";
import { assert } from "../assert.ts";
import { buildClientPackage } from "../../packages/tinker/build.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const TEST_DIR = join(ROOT, "packages/tinker/test");
const TSC = join(ROOT, "packages/tinker/node_modules/typescript/bin/tsc");

async function sh(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}) {
  const out = await new Deno.Command(cmd, { args, cwd, env, stdout: "piped", stderr: "piped" })
    .output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  return { code: out.code, text };
}

Deno.test("npm package: the packed client installs into a Node project and trains two steps against deno task serve", async () => {
  const work = await Deno.makeTempDir({ prefix: "tb-npm-client-" });
  const ready = join(work, "ready.json");
  const serve = new Deno.Command(Deno.execPath(), {
    args: ["task", "serve", "--port", "0", "--data-dir", join(work, "data"), "--ready-file", ready],
    cwd: ROOT,
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let serverPid: number | null = null;
  try {
    const tarball = await buildClientPackage(work);
    assert.ok(tarball);
    const listing = await sh("tar", ["tzf", tarball], work);
    assert.match(listing.text, /package\/dist\/lib\/tinker\/mod\.js/);
    assert.match(listing.text, /package\/dist\/lib\/tinker\/mod\.d\.ts/);
    assert.match(listing.text, /package\/LICENSE/);
    assert.doesNotMatch(listing.text, /lib\/local\/|lib\/tokenizers\/(?!types)/, "no backend");

    const project = join(work, "project");
    await Deno.mkdir(project);
    await Deno.writeTextFile(
      join(project, "package.json"),
      JSON.stringify({ name: "scratch", private: true, type: "module" }),
    );
    const install = await sh("npm", [
      "install",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      tarball,
    ], project);
    assert.equal(install.code, 0, install.text);
    for (const f of ["train.test.mjs", "types_check.ts"]) {
      await Deno.copyFile(join(TEST_DIR, f), join(project, f));
    }
    const types = await sh("node", [
      TSC,
      "--noEmit",
      "--strict",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--target",
      "es2022",
      "--types",
      "node",
      "--typeRoots",
      join(ROOT, "packages/tinker/node_modules/@types"),
      "types_check.ts",
    ], project);
    assert.equal(types.code, 0, types.text);

    while (!(await Deno.stat(ready).then(() => true, () => false))) {
      await new Promise((r) => setTimeout(r, 200));
    }
    const { listening, pid } = JSON.parse(await Deno.readTextFile(ready));
    serverPid = pid;
    const run = await sh("node", ["--test"], project, { TINKER_BASE_URL: listening });
    assert.equal(run.code, 0, run.text);
    assert.match(run.text, /^# pass 1$/m);
    assert.match(run.text, /^# fail 0$/m);
  } finally {
    if (serverPid !== null) Deno.kill(serverPid, "SIGTERM");
    else serve.kill("SIGTERM");
    await serve.status;
    await serve.stderr.cancel().catch(() => {});
    await Deno.remove(work, { recursive: true });
  }
});
