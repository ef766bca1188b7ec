/**
 * The lean install scripts/setup.sh leaves: `node_modules` holds only this system's native code
 * (scripts/prune_install.ts found nothing left to prune), the native libraries it keeps still
 * load, and the npm tokenizer packages' files are kept once each, outside node_modules.
 */

import { existsSync } from "node:fs";
import { join } from "node:path";
import { assert } from "../assert.ts";
import { pruneInstall, thisLibc } from "../../scripts/prune_install.ts";
import { NPM_TOKENIZER_PACKAGES, npmTokenizerFiles } from "../../lib/tokenizers/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const FIX = "run `bash scripts/setup.sh` (it prunes after `deno install`)";

Deno.test("install: nothing of another system is left in node_modules", async () => {
  const ort = join(ROOT, "node_modules", "onnxruntime-node", "bin", "napi-v6");
  assert.deepEqual([...Deno.readDirSync(ort)].map((e) => e.name), ["linux"], FIX);
  assert.deepEqual([...Deno.readDirSync(join(ort, "linux"))].map((e) => e.name), ["x64"], FIX);
  const musl = join(ROOT, "node_modules", ".deno", "nodejs-polars-linux-x64-musl@0.25.2");
  if (thisLibc() === "glibc" && existsSync(musl)) {
    const files = [...Deno.readDirSync(join(musl, "node_modules", "nodejs-polars-linux-x64-musl"))];
    assert.deepEqual(files.map((e) => e.name), ["package.json"], FIX);
  }
  // The pruned packages still load: ONNX Runtime's and polars' native addons.
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      'import ort from "onnxruntime-node"; import pl from "nodejs-polars";' +
      "console.log(typeof ort.InferenceSession.create, pl.DataFrame({ a: [1, 2] }).height);",
    ],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(
    new TextDecoder().decode(out.stdout).trim(),
    "function 2",
    new TextDecoder().decode(out.stderr),
  );
  assert.deepEqual(pruneInstall(ROOT), [], FIX);
});

Deno.test("install: the npm tokenizer packages are kept as their two files, not installed", () => {
  for (const pkg of Object.keys(NPM_TOKENIZER_PACKAGES)) {
    const files = npmTokenizerFiles(pkg);
    assert.ok(files, `${pkg}: ${FIX}`);
    assert.ok(!files.tokenizerJson.includes("node_modules"), files.tokenizerJson);
    assert.ok(!existsSync(join(ROOT, "node_modules", pkg)), `${pkg} is installed`);
  }
});
