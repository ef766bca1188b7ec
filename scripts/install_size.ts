/**
 * Measures an install: the size of `node_modules`, how many packages it holds, and which are
 * there in more than one version. With `--ref REF` it installs REF's deno.json and deno.lock
 * into a scratch folder first (`deno install --frozen`, from Deno's cache), so an earlier
 * commit's install is measured the same way. `--write` records the measurement of this checkout,
 * with REF's beside it, in bench/results/install.json.
 *
 * @module
 */

import { join } from "node:path";
import { runCli, UsageError } from "../lib/cli/args.ts";
import { NPM_TOKENIZER_PACKAGES, npmTokenizerFiles } from "../lib/tokenizers/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/** What one install weighs. */
export interface InstallSize {
  /** Bytes under node_modules (each file once, as `du -sb` counts). */
  bytes: number;
  /** Package versions installed (folders of node_modules/.deno). */
  packages: number;
  /** Packages installed in more than one version. */
  duplicates: string[];
}

async function output(cmd: string, args: string[], cwd: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** Measures `dir`/node_modules. */
export async function measureInstall(dir: string): Promise<InstallSize> {
  const bytes = Number((await output("du", ["-sb", "node_modules"], dir)).split("\t")[0]);
  const names: string[] = [];
  for await (const e of Deno.readDir(join(dir, "node_modules/.deno"))) {
    if (e.isDirectory && !e.name.startsWith(".") && e.name !== "node_modules") names.push(e.name);
  }
  // Folder names are `name@version` (a scope's `/` written `+`), peers after a `_`.
  const byName = new Map<string, Set<string>>();
  for (const n of names) {
    const at = n.lastIndexOf("@");
    const name = n.slice(0, at).replace("+", "/");
    const version = n.slice(at + 1).split("_")[0];
    byName.set(name, (byName.get(name) ?? new Set()).add(version));
  }
  const duplicates = [...byName].filter(([, v]) => v.size > 1).map(([k, v]) =>
    `${k}@${[...v].sort().join(",")}`
  ).sort();
  return { bytes, packages: names.length, duplicates };
}

/** Installs `ref`'s deno.json and deno.lock in a scratch folder and measures it. */
export async function measureRef(ref: string): Promise<InstallSize> {
  const dir = await Deno.makeTempDir({ prefix: "tb-install-" });
  try {
    for (const f of ["deno.json", "deno.lock"]) {
      await Deno.writeTextFile(join(dir, f), await output("git", ["show", `${ref}:${f}`], ROOT));
    }
    await output(Deno.execPath(), ["install", "--frozen", "--quiet"], dir);
    return await measureInstall(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const mb = (b: number) => `${(b / 1e6).toFixed(0)} MB`;

/** The bytes of the npm tokenizer packages' files setup.sh keeps (outside node_modules). */
async function tokenizerFiles(): Promise<number> {
  let bytes = 0;
  for (const pkg of Object.keys(NPM_TOKENIZER_PACKAGES)) {
    const files = npmTokenizerFiles(pkg);
    if (!files) throw new Error(`${pkg}'s tokenizer files are missing: run scripts/setup.sh`);
    for (const f of [files.tokenizerJson, files.tokenizerConfig]) {
      bytes += (await Deno.stat(f)).size;
    }
  }
  return bytes;
}

if (import.meta.main) {
  await runCli(async () => {
    const args = [...Deno.args];
    const at = args.indexOf("--ref");
    const ref = at >= 0 ? args.splice(at, 2)[1] : undefined;
    const write = args.includes("--write");
    const unknown = args.filter((a) => a !== "--write");
    if (unknown.length) throw new UsageError(`unknown argument ${unknown[0]}`);
    if (at >= 0 && !ref) throw new UsageError("--ref needs a commit");
    if (write && !ref) throw new UsageError("--write needs --ref (the install to compare with)");
    const now = await measureInstall(ROOT);
    console.log(`this checkout: ${mb(now.bytes)}, ${now.packages} packages`);
    console.log(`  more than one version: ${now.duplicates.join(" ") || "none"}`);
    if (!ref) return;
    const before = await measureRef(ref);
    console.log(`${ref}: ${mb(before.bytes)}, ${before.packages} packages`);
    console.log(`  more than one version: ${before.duplicates.join(" ") || "none"}`);
    if (!write) return;
    const result = {
      suite: "install",
      date: new Date().toISOString(),
      measured: "node_modules after scripts/setup.sh's steps: `deno install --frozen`, then " +
        "(from 2026-11-28 on) scripts/prune_install.ts; the tokenizer files setup keeps outside " +
        "node_modules are `tokenizerFiles` (before, they were inside it)",
      before: { ref, ...before, mb: Math.round(before.bytes / 1e6) },
      after: { ...now, mb: Math.round(now.bytes / 1e6), tokenizerFiles: await tokenizerFiles() },
    };
    await Deno.writeTextFile(
      join(ROOT, "bench/results/install.json"),
      JSON.stringify(result, null, 2) + "\n",
    );
    console.log("wrote bench/results/install.json");
  }, {
    run: "deno task install-size",
    about:
      "Measures node_modules: its size, its package count and the packages installed twice, optionally against an earlier commit's install",
    usage: "usage: deno task install-size [--ref COMMIT [--write]]",
  });
}
