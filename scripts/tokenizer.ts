/**
 * `deno run -A scripts/tokenizer.ts`: builds the games tokenizer of `local/games2` from the
 * environments' transcripts and writes `models/games_tokenizer/tokenizer.json` and
 * `tokenizer_config.json` (Hugging Face files).
 */

import { join } from "node:path";
import { z } from "zod";
import { parseFlags, runCli } from "../lib/cli/args.ts";
import {
  buildGamesTokenizer,
  GAMES_TOKENIZER_CONFIG,
  GAMES_VOCAB_DEFAULTS,
} from "../lib/pretrain/vocab.ts";
import { GAMES_TOKENIZER_DIR, HfTokenizer } from "../lib/tokenizers/mod.ts";

const USAGE =
  `usage: deno run -A scripts/tokenizer.ts [--transcripts ${GAMES_VOCAB_DEFAULTS.transcripts}]
         [--seed ${GAMES_VOCAB_DEFAULTS.seed}] [--vocab-size ${GAMES_VOCAB_DEFAULTS.vocabSize}] [--out models/games_tokenizer]`;

const Flags = z.object({
  transcripts: z.coerce.number().int().min(1).max(1_000_000).default(
    GAMES_VOCAB_DEFAULTS.transcripts,
  ),
  seed: z.coerce.number().int().default(GAMES_VOCAB_DEFAULTS.seed),
  "vocab-size": z.coerce.number().int().min(600).max(65_536).default(
    GAMES_VOCAB_DEFAULTS.vocabSize,
  ),
  out: z.string().default(GAMES_TOKENIZER_DIR.pathname),
  help: z.boolean().default(false),
});

await runCli(async () => {
  const flags = parseFlags(Deno.args, {
    transcripts: { type: "string" },
    seed: { type: "string" },
    "vocab-size": { type: "string" },
    out: { type: "string" },
    help: { type: "boolean", short: "h" },
  }, Flags);
  if (flags.help) return console.log(USAGE);
  const json = buildGamesTokenizer({
    transcripts: flags.transcripts,
    seed: flags.seed,
    vocabSize: flags["vocab-size"],
  });
  await Deno.mkdir(flags.out, { recursive: true });
  await Deno.writeTextFile(join(flags.out, "tokenizer.json"), JSON.stringify(json, null, 1) + "\n");
  await Deno.writeTextFile(
    join(flags.out, "tokenizer_config.json"),
    JSON.stringify(GAMES_TOKENIZER_CONFIG, null, 2) + "\n",
  );
  const tok = new HfTokenizer("built", json, GAMES_TOKENIZER_CONFIG);
  console.log(`wrote ${flags.out}: ${tok.vocabSize} tokens`);
}, USAGE);
