/**
 * Pretraining data for `local/games`: episodes of the registry's environments played by the
 * format players, written as the chat a rollout produces (the observation as a user message,
 * the action as an assistant message, the feedback as the next user message, …), so the
 * tokens the model is trained on are exactly the tokens it later sees and samples in RL.
 *
 * @module
 */

import { Rng } from "../util/random.ts";
import { makeBuiltin } from "../envs/registry.ts";
import { ChatMLRenderer } from "../renderers/chatml.ts";
import type { Tokenizer } from "../tokenizers/types.ts";
import type { Message, SupervisedExample } from "../renderers/types.ts";
import type { Datum } from "../protocol/mod.ts";
import { datum } from "../tinker/mod.ts";
import { checkDatum } from "../datums/mod.ts";
import { formatPlayer } from "./players.ts";
import { isToolEnvId, playToolTranscript } from "./tool_transcripts.ts";
import { isHintEnvId, playHintTranscript } from "./hint_transcripts.ts";
import {
  ANSWER_HINTED_ID,
  ANSWER_PLAIN_ID,
  isAnswerEnvId,
  playAnswerTranscript,
} from "./answer_transcripts.ts";
import {
  isRecallEnvId,
  playRecallTranscript,
  RECALL_ID,
  RECALL_LETTERS_ID,
  RECALL_NAMES_ID,
  RECALL_RECORDS_ID,
  RECALL_SPELLED_ID,
  RECALL_TOOLS_ID,
} from "./recall_transcripts.ts";
import type { Transcript, TranscriptOptions } from "./transcript.ts";

export type { Transcript, TranscriptOptions } from "./transcript.ts";
import { UNSEEN_TOOLS_ID } from "./unseen_tools.ts";
import { FRESH_TOOLS_ID } from "./fresh_tools.ts";

/** One environment of the pretraining mix and its share of the episodes. */
export interface MixEntry {
  envId: string;
  weight: number;
}

const OTHER_ENVS = [
  "game:Mastermind-v0-easy",
  "game:Mastermind-v0-hard",
  "game:Hangman-v0-easy",
  "game:Hangman-v0-hard",
  "game:TowerofHanoi-v0-easy",
  "game:TowerofHanoi-v0-hard",
  "game:Minesweeper-v0-easy",
  "game:Minesweeper-v0-hard",
  "game:FifteenPuzzle-v0-easy",
  "game:FifteenPuzzle-v0-hard",
  "math:Arithmetic-v0-easy",
  "math:Arithmetic-v0-hard",
];

/**
 * The mix: 60% GuessTheNumber (the game RL on the local backend starts with; half easy, half
 * hard), the other 40% shared equally by the other games' easy and hard variants and the
 * arithmetic task.
 */
export const PRETRAIN_MIX: readonly MixEntry[] = [
  { envId: "game:GuessTheNumber-v0-easy", weight: 0.3 },
  { envId: "game:GuessTheNumber-v0-hard", weight: 0.3 },
  ...OTHER_ENVS.map((envId) => ({ envId, weight: 0.4 / OTHER_ENVS.length })),
];

const TOOL_GAMES = [
  "Mastermind",
  "Hangman",
  "TowerofHanoi",
  "Minesweeper",
  "FifteenPuzzle",
].flatMap((g) => [`tool:${g}-v0-easy`, `tool:${g}-v0-hard`]);

/**
 * The mix the tools tokenizer was built from (`buildToolsTokenizer`): `local/tools`' first mix,
 * a third games transcripts (local/games2's last mix: mostly GuessTheNumber-easy), two thirds
 * tool transcripts, of which three eighths are unseen tools (the format itself), the rest every
 * shipped tool environment, weighted towards the short ones RL starts with (the tool
 * GuessTheNumber, the word problems): a WhoDunIt or Tower of Hanoi transcript fills the
 * context, four times the tokens of a word problem.
 */
export const TOOLS_TOKENIZER_MIX: readonly MixEntry[] = [
  { envId: "game:GuessTheNumber-v0-easy", weight: 0.27 },
  { envId: "game:GuessTheNumber-v0-hard", weight: 0.02 },
  ...OTHER_ENVS.map((envId) => ({ envId, weight: 0.04 / OTHER_ENVS.length })),
  { envId: UNSEEN_TOOLS_ID, weight: 0.25 },
  { envId: "tool:GuessTheNumber-v0-easy", weight: 0.12 },
  { envId: "tool:GuessTheNumber-v0-hard", weight: 0.02 },
  ...[...TOOL_GAMES, "tool:Arithmetic-v0-easy", "tool:Arithmetic-v0-hard"].map((envId) => ({
    envId,
    weight: 0.05 / (TOOL_GAMES.length + 2),
  })),
  { envId: "tool:WhoDunIt-v0-easy", weight: 0.04 },
  { envId: "tool:WhoDunIt-v0-hard", weight: 0.02 },
  { envId: "tool:WordProblems-v0", weight: 0.17 },
];

/**
 * The mix of `local/tools`: {@link TOOLS_TOKENIZER_MIX}, the fresh tools, whose names are made
 * up anew in every task, so that a declared name is copied, not recalled (`fresh_tools.ts`), and
 * recall transcripts, lists of words and of snake_case names said back in order, and questions
 * answered from declared tools and records, some with names spelled in made-up letters
 * (`recall_transcripts.ts`), which form the copying circuit the fresh tools need. Neither is part
 * of the tokenizer's mix: made-up names must not become tokens.
 */
export const TOOLS_PRETRAIN_MIX: readonly MixEntry[] = [
  ...TOOLS_TOKENIZER_MIX,
  { envId: FRESH_TOOLS_ID, weight: 0.25 },
  { envId: RECALL_ID, weight: 0.1 },
  { envId: RECALL_NAMES_ID, weight: 0.1 },
  { envId: RECALL_TOOLS_ID, weight: 0.05 },
  { envId: RECALL_RECORDS_ID, weight: 0.05 },
  { envId: RECALL_SPELLED_ID, weight: 0.1 },
  { envId: RECALL_LETTERS_ID, weight: 0.05 },
];

/**
 * The mix of `local/hint` (`local/games2` taught to use OPD's hint). Its first run mixed
 * local/games2's last mix with GuessTheNumber transcripts ending in a hinted move (`hint:…`,
 * lib/pretrain/hint_transcripts.ts). The shipped runs (this mix) are three quarters one-move
 * number tasks whose hint names the answer (`answer:…`, lib/pretrain/answer_transcripts.ts),
 * beside GuessTheNumber-easy, so the no-hint play is kept (models/README.md, local/hint).
 */
export const HINT_PRETRAIN_MIX: readonly MixEntry[] = [
  { envId: ANSWER_HINTED_ID, weight: 0.6 },
  { envId: ANSWER_PLAIN_ID, weight: 0.15 },
  { envId: "hint:game:GuessTheNumber-v0-easy", weight: 0.05 },
  { envId: "game:GuessTheNumber-v0-easy", weight: 0.15 },
  // What `others=0.05` gave the shipped runs: the rest of the first run's environments.
  ...["hint:game:GuessTheNumber-v0-hard", "game:GuessTheNumber-v0-hard", ...OTHER_ENVS].map((
    envId,
  ) => ({ envId, weight: 0.05 / (OTHER_ENVS.length + 2) })),
];

/**
 * A mix from `id=weight,…`, where `others=w` shares `w` equally among the environments of
 * `base` (default {@link PRETRAIN_MIX}) not named. Weights are relative (they need not sum to
 * 1). Throws a one-line `Error` on an unknown id, a bad weight or an empty mix.
 *
 * @example
 * parseMix("game:GuessTheNumber-v0-easy=0.5,game:GuessTheNumber-v0-hard=0.2,others=0.3");
 */
export function parseMix(spec: string, base: readonly MixEntry[] = PRETRAIN_MIX): MixEntry[] {
  const known = base.map((e) => e.envId);
  const named = new Map<string, number>();
  let others = 0, seenOthers = false;
  for (const part of spec.split(",").map((p) => p.trim()).filter(Boolean)) {
    const eq = part.lastIndexOf("=");
    const id = part.slice(0, eq), weight = Number(part.slice(eq + 1));
    if (eq < 1 || !Number.isFinite(weight) || weight < 0) {
      throw new Error(`mix entry "${part}": expected id=weight with a weight >= 0`);
    }
    if (id === "others" ? seenOthers : named.has(id)) {
      throw new Error(`mix entry "${part}": ${id} is named twice`);
    }
    if (id === "others") [others, seenOthers] = [weight, true];
    else if (!known.includes(id)) {
      throw new Error(`mix entry "${part}": unknown environment; known: ${known.join(", ")}`);
    } else named.set(id, weight);
  }
  const rest = known.filter((id) => !named.has(id));
  const mix = [
    ...[...named].map(([envId, weight]) => ({ envId, weight })),
    ...rest.map((envId) => ({ envId, weight: others / rest.length })),
  ].filter((e) => e.weight > 0);
  if (mix.length === 0) throw new Error(`mix "${spec}" gives every environment weight 0`);
  return mix;
}

/** An env id drawn from a mix by weight. */
export function sampleEnvId(rng: Rng, mix: readonly MixEntry[] = PRETRAIN_MIX): string {
  const total = mix.reduce((a, e) => a + e.weight, 0);
  let u = rng.uniform() * total;
  for (const e of mix) {
    u -= e.weight;
    if (u < 0) return e.envId;
  }
  return mix.at(-1)!.envId;
}

/**
 * Plays one episode of `envId` from `envSeed` with its format player (moves drawn from `rng`)
 * and keeps the longest prefix of whole turns that fits `maxTokens`. `rng` must not be seeded
 * like the env (`new Rng(envSeed)`): the player would then draw the env's own secret.
 */
export function playTranscript(
  envId: string,
  envSeed: number,
  rng: Rng,
  { maxTokens = 1025, renderer = new ChatMLRenderer(), bisectShare }: TranscriptOptions = {},
): Transcript {
  const env = makeBuiltin(envId);
  const player = formatPlayer(envId, { bisectShare });
  let { observation } = env.reset(envSeed);
  const messages: Message[] = [];
  const reasons: string[] = [], rewards: number[] = [];
  let finished = false;
  for (let t = 0; t < env.maxTurns; t++) {
    const action = player.act(env, observation, rng);
    const turn: Message[] = [
      { role: "user", content: observation },
      { role: "assistant", content: action },
    ];
    if (renderer.buildSupervisedExample([...messages, ...turn]).tokens.length > maxTokens) break;
    messages.push(...turn);
    const step = env.step(action);
    reasons.push(String(step.info.reason));
    rewards.push(step.reward);
    if (step.terminated || step.truncated) {
      finished = true;
      break;
    }
    observation = step.observation;
  }
  if (messages.length === 0) {
    throw new Error(`${envId} (seed ${envSeed}): the first turn alone exceeds ${maxTokens} tokens`);
  }
  return { envId, envSeed, messages, reasons, rewards, finished };
}

/**
 * A transcript as training tokens: weight 1 on every move and its `<|im_end|>`, 0 on its
 * mistakes. ChatML renders message by message, so a message's tokens start where the rendering
 * of the messages before it ends.
 */
export function transcriptExample(
  t: Transcript,
  renderer: ChatMLRenderer<Tokenizer> = new ChatMLRenderer(),
): SupervisedExample {
  const ex = renderer.buildSupervisedExample(t.messages, { trainOn: "all_assistant" });
  for (const i of t.mistakes ?? []) {
    const from = renderer.buildSupervisedExample(t.messages.slice(0, i)).tokens.length;
    const to = renderer.buildSupervisedExample(t.messages.slice(0, i + 1)).tokens.length;
    ex.weights.fill(0, from, to);
  }
  return ex;
}

/** The `cross_entropy` datum of an example: inputs tokens[:-1], targets tokens[1:], weights[1:]. */
export function exampleDatum(ex: SupervisedExample): Datum {
  return checkDatum(
    datum(ex.tokens.slice(0, -1), {
      target_tokens: ex.tokens.slice(1),
      weights: ex.weights.slice(1),
    }),
  );
}

/**
 * A seeded stream of transcripts from the mix: the same seed gives the same transcripts, so a
 * pretraining run is reproducible.
 *
 * @example
 * const stream = new TranscriptStream(0);
 * const batch = (await stream.next(32)).map((t) => exampleDatum(transcriptExample(t)));
 */
export class TranscriptStream {
  readonly #rng: Rng;
  readonly #mix: readonly MixEntry[];
  readonly #opts: TranscriptOptions;

  constructor(seed: number, mix: readonly MixEntry[] = PRETRAIN_MIX, opts: TranscriptOptions = {}) {
    this.#rng = new Rng(seed);
    this.#mix = mix;
    this.#opts = opts;
  }

  /** The next `n` transcripts (tool environments answer asynchronously). */
  async next(n: number): Promise<Transcript[]> {
    const out: Transcript[] = [];
    for (let i = 0; i < n; i++) {
      const envId = sampleEnvId(this.#rng, this.#mix);
      const seed = this.#rng.nextU32();
      out.push(
        isToolEnvId(envId)
          ? await playToolTranscript(envId, seed, this.#rng, this.#opts)
          : isHintEnvId(envId)
          ? playHintTranscript(envId, seed, this.#rng, this.#opts)
          : isAnswerEnvId(envId)
          ? playAnswerTranscript(envId, seed, this.#rng, this.#opts)
          : isRecallEnvId(envId)
          ? playRecallTranscript(envId, seed, this.#rng, this.#opts)
          : playTranscript(envId, seed, this.#rng, this.#opts),
      );
    }
    return out;
  }
}
