/**
 * `deno run -A scripts/tokenizer.ts`: builds the games tokenizer of `local/games2` from the
 * environments' transcripts and writes `models/games_tokenizer/tokenizer.json` and
 * `tokenizer_config.json` (Hugging Face files); with `--tools`, the tools tokenizer of
 * `local/tools` (the committed games tokenizer extended) into `models/tools_tokenizer/`.
 * `--stats` prints instead the model card's table of tokens per move and per episode, byte
 * tokenizer against the committed games tokenizer (`--tools`: games → tools tokenizer, on
 * `local/tools`' mix).
 */

import { join } from "node:path";
import { z } from "zod";
import { parseFlags, runCli } from "../lib/cli/args.ts";
import {
  buildGamesTokenizer,
  buildToolsTokenizer,
  GAMES_TOKENIZER_CONFIG,
  GAMES_VOCAB_DEFAULTS,
  tokenCounts,
  TOOLS_VOCAB_DEFAULTS,
} from "../lib/pretrain/vocab.ts";
import { PRETRAIN_MIX, TOOLS_PRETRAIN_MIX } from "../lib/pretrain/transcripts.ts";
import { ChatMLRenderer } from "../lib/renderers/chatml.ts";
import {
  GAMES_TOKENIZER_DIR,
  HfTokenizer,
  loadGamesTokenizer,
  loadToolsTokenizer,
  type Tokenizer,
  TOOLS_TOKENIZER_DIR,
} from "../lib/tokenizers/mod.ts";

const ABOUT =
  "Builds the games tokenizer of local/games2 from the environments' transcripts (Hugging Face files " +
  "in models/games_tokenizer/); --stats prints the model card's table of tokens per move and per " +
  "episode instead.";

const USAGE =
  `usage: deno run -A scripts/tokenizer.ts [--transcripts ${GAMES_VOCAB_DEFAULTS.transcripts}]
         [--seed ${GAMES_VOCAB_DEFAULTS.seed}] [--vocab-size ${GAMES_VOCAB_DEFAULTS.vocabSize}] [--out models/games_tokenizer]
       deno run -A scripts/tokenizer.ts --tools [--seed ${TOOLS_VOCAB_DEFAULTS.seed}] [--vocab-size ${TOOLS_VOCAB_DEFAULTS.vocabSize}]
         [--out models/tools_tokenizer]
       deno run -A scripts/tokenizer.ts --stats [--tools] [--episodes 100]`;

const Flags = z.object({
  transcripts: z.coerce.number().int().min(1).max(1_000_000).default(
    GAMES_VOCAB_DEFAULTS.transcripts,
  ),
  seed: z.coerce.number().int().optional(),
  "vocab-size": z.coerce.number().int().min(600).max(65_536).optional(),
  out: z.string().optional(),
  stats: z.boolean().default(false),
  tools: z.boolean().default(false),
  episodes: z.coerce.number().int().min(1).max(100_000).default(100),
});

await runCli(async () => {
  const flags = parseFlags(Deno.args, {
    transcripts: { type: "string" },
    seed: { type: "string" },
    "vocab-size": { type: "string" },
    out: { type: "string" },
    stats: { type: "boolean" },
    tools: { type: "boolean" },
    episodes: { type: "string" },
  }, Flags);
  if (flags.stats) return await printStats(flags.episodes, flags.tools);
  const defaults = flags.tools ? TOOLS_VOCAB_DEFAULTS : GAMES_VOCAB_DEFAULTS;
  const options = {
    transcripts: flags.transcripts,
    seed: flags.seed ?? defaults.seed,
    vocabSize: flags["vocab-size"] ?? defaults.vocabSize,
  };
  const json = flags.tools
    ? await buildToolsTokenizer(
      JSON.parse(await Deno.readTextFile(new URL("tokenizer.json", GAMES_TOKENIZER_DIR))),
      options,
    )
    : await buildGamesTokenizer(options);
  const out = flags.out ?? (flags.tools ? TOOLS_TOKENIZER_DIR : GAMES_TOKENIZER_DIR).pathname;
  await Deno.mkdir(out, { recursive: true });
  await Deno.writeTextFile(join(out, "tokenizer.json"), JSON.stringify(json, null, 2) + "\n");
  await Deno.writeTextFile(
    join(out, "tokenizer_config.json"),
    JSON.stringify(GAMES_TOKENIZER_CONFIG, null, 2) + "\n",
  );
  const tok = new HfTokenizer("built", json, GAMES_TOKENIZER_CONFIG);
  console.log(`wrote ${out}: ${tok.vocabSize} tokens`);
}, { run: "deno run -A scripts/tokenizer.ts", about: ABOUT, usage: USAGE });

/**
 * The model card's table: tokens per move and per episode, bytes → games tokenizer (with
 * `tools`: games → tools tokenizer, on `local/tools`' mix).
 */
async function printStats(episodes: number, tools: boolean): Promise<void> {
  const envIds = (tools ? TOOLS_PRETRAIN_MIX : PRETRAIN_MIX).map((e) => e.envId);
  const count = (tok: Tokenizer) =>
    tokenCounts(envIds, new ChatMLRenderer<Tokenizer>(tok), { episodes });
  const bytes = await count(tools ? loadGamesTokenizer() : new ChatMLRenderer().tokenizer);
  const games = await count(tools ? loadToolsTokenizer() : loadGamesTokenizer());
  console.log(
    `${episodes} format-player episodes per environment (env seeds 0–${episodes - 1}):\n`,
  );
  console.log("| environment | tokens per move | tokens per episode (mean) | longest episode |");
  console.log("| --- | --- | --- | --- |");
  bytes.forEach((b, i) => {
    const g = games[i];
    console.log(
      `| ${b.envId} | ${b.perMove.toFixed(1)} → ${g.perMove.toFixed(1)} | ` +
        `${b.perEpisode.toFixed(0)} → ${
          g.perEpisode.toFixed(0)
        } | ${b.maxEpisode} → ${g.maxEpisode} |`,
    );
  });
}
