/**
 * Every live model of the table starts `deno task train --model-name M` on a fresh machine
 * (offline, no TINKER_API_KEY, empty caches) and runs until the cloud or a tokenizer that
 * cannot be had offline is needed, then stops with one line naming what is missing.
 */

import { assert } from "../assert.ts";
import { MODELS } from "../../lib/models/mod.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** What stops each model here: the cloud (its tokenizer and renderer are here) or a tokenizer. */
const STOP: Record<string, RegExp> = {
  "Qwen/Qwen3-8B": /Set TINKER_API_KEY/,
  "openai/gpt-oss-120b": /Set TINKER_API_KEY/,
  "openai/gpt-oss-20b": /Set TINKER_API_KEY/,
  "deepseek-ai/DeepSeek-V3.1": /Set TINKER_API_KEY/,
  "thinkingmachines/Inkling": /no tokenizer for .*tml-renderers package, which cannot be read/,
  "thinkingmachines/Inkling-Small":
    /no tokenizer for .*tml-renderers package, which cannot be read/,
  "moonshotai/Kimi-K2.6": /no tokenizer for .*tiktoken/,
};
/** The rest need their Hugging Face tokenizer files, which the hub would give with network. */
const FETCH =
  /no tokenizer files for \S+ \(the hub is unreachable[^)]*\): run `deno task models fetch/;

async function train(model: string, cache: string): Promise<{ code: number; stderr: string }> {
  const env = { ...Deno.env.toObject() };
  delete env.TINKER_API_KEY;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "scripts/train.ts", "--model-name", model],
    cwd: ROOT,
    env: {
      ...env,
      TINKERBENCH_HF_CACHE: cache,
      HF_HOME: cache,
      // Nothing listens there: the hub cannot be reached, as on a machine offline.
      HF_ENDPOINT: "http://127.0.0.1:9",
      NO_COLOR: "1",
    },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
}

Deno.test("lineup: every live model starts `deno task train` and stops with one line naming what is missing", async () => {
  const cache = await Deno.makeTempDir({ prefix: "tb-lineup-" });
  try {
    const live = MODELS.filter((m) => m.status === "live").map((m) => m.name);
    assert.equal(live.length, 19);
    // Two at a time: the machine's two cores.
    for (let i = 0; i < live.length; i += 2) {
      await Promise.all(
        live.slice(i, i + 2).map(async (model) => {
          const { code, stderr } = await train(model, cache);
          // Deno's own lines (a lock on node_modules while another process installs) come first.
          const lines = stderr.trim().split("\n").filter((l) => !/^(Blocking|Download) /.test(l));
          const first = lines[0] ?? "";
          assert.notEqual(code, 0, model);
          assert.match(first, /^error: /, `${model}: ${stderr}`);
          assert.match(first, STOP[model] ?? FETCH, `${model}: ${first}`);
          assert.ok(!stderr.includes("    at "), `${model}: no stack trace\n${stderr}`);
        }),
      );
    }
  } finally {
    await Deno.remove(cache, { recursive: true });
  }
});
