/**
 * The library compiled for the browser: `deno bundle` of ./browser.ts (the pure functions the
 * page calls: why nothing trained, what-if re-scoring) into one script, written beside
 * plotly.js in the viewer's assets folder. Built when a page is written (about a second, once
 * per process), so the page always runs the library it was written with, never a copy.
 *
 * @module
 */

import { fileURLToPath as fromFileUrl } from "node:url";

let built: Promise<string> | null = null;

/**
 * The bundled script (an IIFE that sets `globalThis.tinkerbench`); rejects with one line when
 * `deno bundle` fails.
 */
export function browserLibSource(): Promise<string> {
  built ??= bundle().catch((e) => {
    built = null;
    throw e;
  });
  return built;
}

async function bundle(): Promise<string> {
  const entry = new URL("./browser.ts", import.meta.url);
  const config = new URL("../../deno.json", import.meta.url);
  if (entry.protocol !== "file:") {
    throw new Error(`the viewer's library bundle needs local sources (${entry.protocol} given)`);
  }
  const out = await Deno.makeTempFile({ prefix: "tb-viewer-", suffix: ".js" });
  try {
    const { code, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        "--config",
        fromFileUrl(config),
        "--platform",
        "browser",
        "--format",
        "iife",
        "--minify",
        "--output",
        out,
        fromFileUrl(entry),
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (code !== 0) {
      const why = new TextDecoder().decode(stderr).trim().split("\n").at(-1);
      throw new Error(`deno bundle of the viewer's library failed: ${why}`);
    }
    return await Deno.readTextFile(out);
  } finally {
    await Deno.remove(out).catch(() => undefined);
  }
}
