/**
 * `deno task export tinker://<run>/sampler_weights/<name> OUT_DIR [--data-dir DIR]`: writes a
 * trained local policy as a model folder transformers.js loads (`lib/local/onnx/export.ts`).
 */

import { z } from "zod";
import { parseCommandLine, runCli, UsageError } from "../lib/cli/args.ts";
import { CheckpointStore } from "../lib/local/checkpoints.ts";
import { exportPolicy } from "../lib/local/onnx/export.ts";
import { defaultDataDir } from "../lib/local/server/mod.ts";

const ABOUT = "Exports a policy trained on the local backend as a model folder that " +
  "transformers.js (@huggingface/transformers) loads, its LoRA folded in.";

const USAGE =
  `usage: deno task export tinker://<run>/sampler_weights/<name> OUT_DIR [--data-dir DIR]

  Writes OUT_DIR/{config.json, generation_config.json, tokenizer.json, tokenizer_config.json,
  onnx/model.onnx}: the policy with its LoRA folded in, loadable by @huggingface/transformers,
  e.g. pipeline("text-generation", "OUT_DIR") with env.localModelPath set to OUT_DIR's parent.
  --data-dir is the local backend's checkpoint directory (default $TINKERBENCH_HOME or
  ~/.cache/tinkerbench/local).`;

const Flags = z.object({
  "data-dir": z.string().default(defaultDataDir()),
});

await runCli(async () => {
  const { flags, positionals: positional } = parseCommandLine(
    Deno.args,
    { "data-dir": { type: "string" } },
    Flags,
  );
  if (positional.length !== 2) throw new UsageError("give a checkpoint path and an output folder");
  const [path, outDir] = positional;
  const files = await exportPolicy({
    checkpoints: new CheckpointStore(flags["data-dir"]),
    path,
    outDir,
  });
  console.log(`exported ${path} to ${outDir}:`);
  for (const f of files) console.log(`  ${f}`);
}, { run: "deno task export", about: ABOUT, usage: USAGE });
