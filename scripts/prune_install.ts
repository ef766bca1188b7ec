/**
 * Removes from an installed `node_modules` the native code this machine cannot load, after
 * `deno install` (scripts/setup.sh runs it; so do the tests' own installs, tests/deps.ts):
 *
 * - packages built for the other C library: Deno installs an optional dependency for every libc
 *   of this OS and CPU (nodejs-polars' `-gnu` and `-musl`, sharp's `libvips`), whose
 *   `package.json` says which libc it needs (`"libc": ["musl"]`);
 * - onnxruntime-node's libraries for other systems: one package carries Windows, macOS and
 *   Linux on arm64 and x64 (`bin/napi-v6/<os>/<cpu>/`), and loads only this system's.
 *
 * Deno's own cache keeps the full packages, and a later `deno install` leaves pruned folders as
 * they are. It prints each removal and the megabytes freed.
 *
 * usage: deno run -A scripts/prune_install.ts [DIR]   (DIR holds node_modules; default: here)
 *
 * @module
 */

import { existsSync, lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** One removal: what, why, and the bytes it freed. */
export interface Pruned {
  path: string;
  why: string;
  bytes: number;
}

/** The C library of this machine: musl when its dynamic loader is musl's, else glibc. */
export function thisLibc(): "glibc" | "musl" {
  const cpu = Deno.build.arch;
  return existsSync(`/lib/ld-musl-${cpu}.so.1`) ? "musl" : "glibc";
}

function sizeOf(path: string): number {
  const st = lstatSync(path);
  if (!st.isDirectory()) return st.size;
  let total = 0;
  for (const e of readdirSync(path)) total += sizeOf(join(path, e));
  return total;
}

function remove(path: string, why: string, out: Pruned[]): void {
  const bytes = sizeOf(path);
  Deno.removeSync(path, { recursive: true });
  out.push({ path, why, bytes });
}

const NODE_OS: Record<string, string> = { linux: "linux", darwin: "darwin", windows: "win32" };
const NODE_CPU: Record<string, string> = { x86_64: "x64", aarch64: "arm64" };

/**
 * Prunes `dir`/node_modules (Deno's layout: one folder per package version under `.deno/`).
 * Returns what it removed; an already pruned install gives an empty list.
 */
export function pruneInstall(dir: string, libc: "glibc" | "musl" = thisLibc()): Pruned[] {
  const store = join(dir, "node_modules", ".deno");
  const out: Pruned[] = [];
  const os = NODE_OS[Deno.build.os];
  const cpu = NODE_CPU[Deno.build.arch];
  for (const folder of readdirSync(store)) {
    if (folder.startsWith(".") || folder === "node_modules") continue;
    const at = folder.lastIndexOf("@");
    const name = folder.slice(0, at).replace("+", "/");
    const root = join(store, folder, "node_modules", name);
    const manifest = join(root, "package.json");
    if (!existsSync(manifest)) continue;
    const pkg = JSON.parse(readFileSync(manifest, "utf8")) as { libc?: string[] };
    if (pkg.libc && !pkg.libc.includes(libc)) {
      // The package's folder and manifest stay: Deno reinstalls a missing folder, not its files.
      const files = readdirSync(root).filter((e) => e !== "package.json");
      const bytes = files.reduce((sum, e) => sum + sizeOf(join(root, e)), 0);
      for (const e of files) Deno.removeSync(join(root, e), { recursive: true });
      if (files.length) {
        out.push({ path: root, why: `built for ${pkg.libc.join(", ")}, this has ${libc}`, bytes });
      }
      continue;
    }
    if (name === "onnxruntime-node") {
      const bin = join(root, "bin");
      for (const napi of existsSync(bin) ? readdirSync(bin) : []) {
        for (const sys of readdirSync(join(bin, napi))) {
          const sysDir = join(bin, napi, sys);
          if (sys !== os) {
            remove(sysDir, `onnxruntime for ${sys}, this is ${os}`, out);
            continue;
          }
          for (const arch of readdirSync(sysDir)) {
            if (arch !== cpu) {
              remove(join(sysDir, arch), `onnxruntime for ${arch}, this is ${cpu}`, out);
            }
          }
        }
      }
    }
  }
  return out;
}

if (import.meta.main) {
  const dir = Deno.args[0] ?? new URL("..", import.meta.url).pathname;
  const pruned = pruneInstall(dir);
  for (const p of pruned) {
    console.log(`prune: ${p.path.slice(dir.length)} (${(p.bytes / 1e6).toFixed(0)} MB): ${p.why}`);
  }
  const mb = pruned.reduce((s, p) => s + p.bytes, 0) / 1e6;
  console.log(`prune: ${pruned.length} removed, ${mb.toFixed(0)} MB freed`);
}
