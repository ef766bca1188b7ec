/**
 * The library as a package: deno.json's name, version and exports, the LICENSE, and entries
 * that stay light. Importing the client, the renderers or the RL vocabulary loads no native
 * library and no backend: each is imported in a subprocess with no permission at all (a native
 * addon needs --allow-ffi, a file read at import --allow-read), and its import graph holds no
 * file of lib/local/.
 */

import { assert } from "../assert.ts";

const ROOT = new URL("../../", import.meta.url);
const DENO = Deno.execPath();

const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT))) as {
  name: string;
  version: string;
  license: string;
  exports: Record<string, string>;
};

/** The local modules and npm packages of `entry`'s import graph (`deno info`). */
async function graph(entry: string): Promise<{ files: string[]; npm: string[] }> {
  const out = await new Deno.Command(DENO, {
    args: ["info", "--json", entry],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: { kind: string; specifier: string; npmPackage?: string }[];
  };
  const root = ROOT.href;
  return {
    files: info.modules.filter((m) => m.specifier.startsWith(root))
      .map((m) => m.specifier.slice(root.length)),
    npm: info.modules.flatMap((m) => (m.npmPackage ? [m.npmPackage.replace(/@[^@]*$/, "")] : [])),
  };
}

/** Imports `entry` in a fresh process with no permissions; its exit code and stderr. */
async function importBare(entry: string): Promise<{ code: number; stderr: string }> {
  const dir = await Deno.makeTempDir();
  try {
    const script = `${dir}/import.ts`;
    await Deno.writeTextFile(
      script,
      `const m = await import(${JSON.stringify(new URL(entry, ROOT).href)});\n` +
        `if (Object.keys(m).length === 0) throw new Error("no exports");\n`,
    );
    const out = await new Deno.Command(DENO, {
      args: ["run", "--no-prompt", "--config", new URL("deno.json", ROOT).pathname, script],
      cwd: ROOT,
      stdout: "null",
      stderr: "piped",
    }).output();
    return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("package: deno.json names the package, its version, license and entries; LICENSE is Apache-2.0", async () => {
  assert.match(config.name, /^@[a-z0-9-]+\/[a-z0-9-]+$/);
  assert.match(config.version, /^\d+\.\d+\.\d+$/);
  assert.equal(config.license, "Apache-2.0");
  assert.deepEqual(Object.keys(config.exports).sort(), [
    ".",
    "./client",
    "./local",
    "./renderers",
    "./rl",
    "./trainer",
    "./viewer",
  ]);
  for (const file of Object.values(config.exports)) await Deno.stat(new URL(file, ROOT));
  const license = await Deno.readTextFile(new URL("LICENSE", ROOT));
  assert.match(license, /Apache License\s+Version 2\.0, January 2004/);
});

for (const entry of ["./client", "./renderers", "./rl"]) {
  Deno.test(`package: ${entry} loads no native library, no backend, and reads no file at import`, async () => {
    const file = config.exports[entry];
    const g = await graph(file);
    assert.deepEqual(g.files.filter((f) => f.startsWith("lib/local/")), []);
    for (const heavy of ["onnxruntime-node", "@jax-js/jax", "nodejs-polars", "hono"]) {
      assert.ok(!g.npm.includes(heavy), `${entry} pulls ${heavy}`);
    }
    const bare = await importBare(file);
    assert.equal(bare.code, 0, bare.stderr);
  });
}

Deno.test("package: the local backend's entry does load ONNX Runtime (the checks above can fail)", async () => {
  const file = config.exports["./local"];
  assert.ok((await graph(file)).npm.includes("onnxruntime-node"));
  const bare = await importBare(file);
  assert.notEqual(bare.code, 0);
  assert.match(bare.stderr, /NotCapable|Requires (ffi|read|env)/);
});
