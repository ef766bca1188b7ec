/**
 * Builds the npm package of the Tinker client from lib/tinker (the one source; nothing is
 * copied by hand): TypeScript compiles lib/tinker and what it imports (lib/protocol and two
 * small files) to ESM with declarations in dist/, the declarations' `.ts` specifiers become
 * `.js` (as the emitted code's are), and the repository's LICENSE is added. With `--pack DIR`
 * it then runs `npm pack` into DIR and prints the tarball's path.
 *
 * The compiler is this package's own dev dependency (`npm ci` here, run when missing), so the
 * workbench's install does not carry it.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath as fromFileUrl } from "node:url";

const HERE = fromFileUrl(new URL(".", import.meta.url));
const ROOT = fromFileUrl(new URL("../../", import.meta.url));

async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd: HERE, stdout: "piped", stderr: "piped" })
    .output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(
      `${cmd} ${args.join(" ")} failed (exit ${out.code}):\n${text}${
        new TextDecoder().decode(out.stderr)
      }`,
    );
  }
  return text;
}

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/** Every file under `dir`. */
async function* walk(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory) yield* walk(path);
    else yield path;
  }
}

/** Builds dist/; with `packDir`, packs the package there and returns the tarball's path. */
export async function buildClientPackage(packDir?: string): Promise<string | null> {
  if (!await exists(join(HERE, "node_modules/typescript"))) {
    await run("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error", "--ignore-scripts"]);
  }
  await Deno.remove(join(HERE, "dist"), { recursive: true }).catch(() => {});
  await run("node", [join(HERE, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"]);
  for await (const file of walk(join(HERE, "dist"))) {
    if (!file.endsWith(".d.ts")) continue;
    const text = await Deno.readTextFile(file);
    await Deno.writeTextFile(
      file,
      text.replace(/(from\s+["']\.{1,2}\/[^"']*)\.ts(["'])/g, "$1.js$2"),
    );
  }
  await Deno.copyFile(join(ROOT, "LICENSE"), join(HERE, "LICENSE"));
  if (!packDir) return null;
  const json = JSON.parse(await run("npm", ["pack", "--json", "--pack-destination", packDir]));
  return join(packDir, json[0].filename);
}

if (import.meta.main) {
  const i = Deno.args.indexOf("--pack");
  const tarball = await buildClientPackage(i >= 0 ? Deno.args[i + 1] : undefined);
  console.log(tarball ?? `built ${join(HERE, "dist")}`);
}
