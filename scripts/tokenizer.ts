/**
 * `deno run -A scripts/tokenizer.ts`: builds the games tokenizer of `local/games2` from the
 * environments' transcripts and writes `models/games_tokenizer/tokenizer.json` and
 * `tokenizer_config.json` (Hugging Face files). `--stats` prints instead the model card's table
 * of tokens per move and per episode, byte tokenizer against the committed games tokenizer.
 */

import { join } from "node:path";
import { z } from "zod";
import { parseFlags, runCli } from "../lib/cli/args.ts";
import {
  buildGamesTokenizer,
  GAMES_TOKENIZER_CONFIG,
  GAMES_VOCAB_DEFAULTS,
  tokenCounts,
} from "../lib/pretrain/vocab.ts";
import { PRETRAIN_MIX } from "../lib/pretrain/transcripts.ts";
import { ChatMLRenderer } from "../lib/renderers/chatml.ts";
import {
  GAMES_TOKENIZER_DIR,
  HfTokenizer,
  loadGamesTokenizer,
  type Tokenizer,
} from "../lib/tokenizers/mod.ts";

const ABOUT =
  "Builds the games tokenizer of local/games2 from the environments' transcripts (Hugging Face files " +
  "in models/games_tokenizer/); --stats prints the model card's table of tokens per move and per " +
  "episode instead.";

const USAGE =
  `usage: deno run -A scripts/tokenizer.ts [--transcripts ${GAMES_VOCAB_DEFAULTS.transcripts}]
         [--seed ${GAMES_VOCAB_DEFAULTS.seed}] [--vocab-size ${GAMES_VOCAB_DEFAULTS.vocabSize}] [--out models/games_tokenizer]
       deno run -A scripts/tokenizer.ts --stats [--episodes 100]`;

const Flags = z.object({
  transcripts: z.coerce.number().int().min(1).max(1_000_000).default(
    GAMES_VOCAB_DEFAULTS.transcripts,
  ),
  seed: z.coerce.number().int().default(GAMES_VOCAB_DEFAULTS.seed),
  "vocab-size": z.coerce.number().int().min(600).max(65_536).default(
    GAMES_VOCAB_DEFAULTS.vocabSize,
  ),
  out: z.string().default(GAMES_TOKENIZER_DIR.pathname),
  stats: z.boolean().default(false),
  episodes: z.coerce.number().int().min(1).max(100_000).default(100),
});

await runCli(async () => {
  const flags = parseFlags(Deno.args, {
    transcripts: { type: "string" },
    seed: { type: "string" },
    "vocab-size": { type: "string" },
    out: { type: "string" },
    stats: { type: "boolean" },
    episodes: { type: "string" },
  }, Flags);
  if (flags.stats) return printStats(flags.episodes);
  const json = buildGamesTokenizer({
    transcripts: flags.transcripts,
    seed: flags.seed,
    vocabSize: flags["vocab-size"],
  });
  await Deno.mkdir(flags.out, { recursive: true });
  await Deno.writeTextFile(join(flags.out, "tokenizer.json"), JSON.stringify(json, null, 2) + "\n");
  await Deno.writeTextFile(
    join(flags.out, "tokenizer_config.json"),
    JSON.stringify(GAMES_TOKENIZER_CONFIG, null, 2) + "\n",
  );
  const tok = new HfTokenizer("built", json, GAMES_TOKENIZER_CONFIG);
  console.log(`wrote ${flags.out}: ${tok.vocabSize} tokens`);
}, { run: "deno run -A scripts/tokenizer.ts", about: ABOUT, usage: USAGE });

/** The model card's table: tokens per move and per episode, bytes → games tokenizer. */
function printStats(episodes: number): void {
  const envIds = PRETRAIN_MIX.map((e) => e.envId);
  const count = (tok: Tokenizer) =>
    tokenCounts(envIds, new ChatMLRenderer<Tokenizer>(tok), { episodes });
  const bytes = count(new ChatMLRenderer().tokenizer), games = count(loadGamesTokenizer());
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
