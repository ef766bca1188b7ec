/**
 * The models the local backend serves: names that map to a GPT config, a tokenizer and
 * (when the project ships them) trained base weights.
 *
 * @module
 */

import { type ModelConfig, ModelConfigSchema } from "./model/config.ts";
import { checkBaseParameters, initBaseParameters } from "./model/params.ts";
import type { NamedTensors } from "./tensors.ts";
import { readSafetensors } from "./safetensors.ts";
import { BYTE_VOCAB_SIZE } from "../tokenizers/byte.ts";
import {
  GAMES_TOKENIZER_ID,
  loadGamesTokenizer,
  loadToolsTokenizer,
  TOOLS_TOKENIZER_ID,
} from "../tokenizers/games.ts";

/** A model the local backend can serve. */
export interface LocalModelSpec {
  /** Name used as `base_model` on the wire, e.g. `local/tiny`. */
  name: string;
  /** One line on what it is for. */
  description: string;
  /** The model's architecture. */
  config: ModelConfig;
  /** Tokenizer id, as reported in get_info. */
  tokenizerId: string;
  /** Safetensors file of trained base weights; absent means seeded random init. */
  weightsFile?: URL;
  /** Seed of the random init when there is no weights file. */
  initSeed: number;
}

const WEIGHTS_DIR = new URL("../../models/", import.meta.url);

/** The attention window of `local/long`: keys a token sees, itself included. */
const LONG_WINDOW = 256;

/** Every model the local backend serves. */
export const LOCAL_MODELS: readonly LocalModelSpec[] = [
  {
    name: "local/tiny",
    description: "2-layer, d64 byte-level GPT for tests and quick demos",
    config: ModelConfigSchema.parse({
      vocabSize: BYTE_VOCAB_SIZE,
      dModel: 64,
      nLayers: 2,
      nHeads: 4,
      maxSeqLen: 256,
    }),
    tokenizerId: "tinkerbench/byte",
    initSeed: 1,
  },
  {
    name: "local/small",
    description: "6-layer, d256 byte-level GPT, the default for RL on the local backend",
    config: ModelConfigSchema.parse({
      vocabSize: BYTE_VOCAB_SIZE,
      dModel: 256,
      nLayers: 6,
      nHeads: 8,
      maxSeqLen: 1024,
    }),
    tokenizerId: "tinkerbench/byte",
    initSeed: 2,
  },
  {
    name: "local/bench",
    description: "the benchmark model: vocab 512, d128, 4 layers, 4 heads, context 128",
    config: ModelConfigSchema.parse({
      vocabSize: 512,
      dModel: 128,
      nLayers: 4,
      nHeads: 4,
      maxSeqLen: 128,
    }),
    tokenizerId: "tinkerbench/byte",
    initSeed: 3,
  },
  {
    name: "local/games",
    description: "4-layer, d128 byte-level GPT pretrained on game and arithmetic transcripts " +
      "(formats, not strategies): the base model for RL on the local backend",
    config: ModelConfigSchema.parse({
      vocabSize: BYTE_VOCAB_SIZE,
      dModel: 128,
      nLayers: 4,
      nHeads: 4,
      maxSeqLen: 1024,
    }),
    tokenizerId: "tinkerbench/byte",
    initSeed: 4,
  },
  {
    name: "local/games2",
    description: "local/games' architecture over the games tokenizer (numbers, game words and " +
      "chat markup are single tokens), pretrained on the same transcripts",
    config: ModelConfigSchema.parse({
      vocabSize: loadGamesTokenizer().vocabSize,
      dModel: 128,
      nLayers: 4,
      nHeads: 4,
      maxSeqLen: 1024,
    }),
    tokenizerId: GAMES_TOKENIZER_ID,
    initSeed: 5,
  },
  {
    name: "local/hint",
    description: "local/games2 pretrained further to copy a number OPD's hindsight hint " +
      "names (the teacher and base model of the opd and combine example, Lucky Number)",
    config: ModelConfigSchema.parse({
      vocabSize: loadGamesTokenizer().vocabSize,
      dModel: 128,
      nLayers: 4,
      nHeads: 4,
      maxSeqLen: 1024,
    }),
    tokenizerId: GAMES_TOKENIZER_ID,
    initSeed: 7,
  },
  {
    name: "local/tools",
    description: "local/games2 over the tools tokenizer with rotary positions, pretrained " +
      "further on tool-call transcripts (the tool games, WhoDunIt, word problems, made-up " +
      "tools), drills for copying names, and the games",
    config: ModelConfigSchema.parse({
      vocabSize: loadToolsTokenizer().vocabSize,
      dModel: 128,
      nLayers: 4,
      nHeads: 4,
      maxSeqLen: 1024,
      // Copying a declared name is an induction (match the tokens before, copy the next), which
      // rotary positions let attention learn from relative offsets: runs with a learned table
      // plateaued at 14 of 64 unseen calls, rotary runs reached 35, 51 with letter drills
      // (models/README.md).
      positions: "rope",
    }),
    tokenizerId: TOOLS_TOKENIZER_ID,
    initSeed: 6,
  },
  {
    name: "local/long",
    description: "local/tools' network with sliding-window attention (window " +
      `${LONG_WINDOW}): a 65,536-token context for agent-sized prompts at a cost linear in length`,
    config: ModelConfigSchema.parse({
      vocabSize: loadToolsTokenizer().vocabSize,
      dModel: 128,
      nLayers: 4,
      nHeads: 4,
      maxSeqLen: 65536,
      positions: "rope",
      attentionWindow: LONG_WINDOW,
    }),
    tokenizerId: TOOLS_TOKENIZER_ID,
    initSeed: 7,
  },
];

/** Looks up a served model by name. */
export function findLocalModel(name: string): LocalModelSpec | undefined {
  return LOCAL_MODELS.find((m) => m.name === name);
}

/** Names of the served models, for error messages and get_server_capabilities. */
export function localModelNames(): string[] {
  return LOCAL_MODELS.map((m) => m.name);
}

/**
 * Base weights of a served model: the shipped safetensors file when it exists, otherwise a
 * seeded random init (so every run of an untrained model starts from identical weights).
 */
export async function loadBaseWeights(spec: LocalModelSpec): Promise<NamedTensors> {
  const file = spec.weightsFile ??
    new URL(`${spec.name.replace("/", "_")}.safetensors`, WEIGHTS_DIR);
  try {
    const { tensors } = await readSafetensors(file.pathname);
    checkBaseParameters(spec.config, tensors);
    return tensors;
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    return initBaseParameters(spec.config, spec.initSeed);
  }
}
