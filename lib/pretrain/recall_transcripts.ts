/**
 * Pretraining data that can only be predicted by copying from the context: the user writes a
 * list of words in a random order, and the assistant writes the same list again.
 *
 * Why: `local/tools` does not copy a tool's name or argument names from its context (greedy, 0 of
 * 64 unseen tools' calls; models/README.md). Copying needs an induction circuit: a head that finds
 * the earlier occurrence of the current token and predicts the token after it. In the tool
 * transcripts a handful of action tokens per transcript need it, and 4 M tokens of them did not
 * form it. Here every action token but the first needs it, in a transcript a quarter the length.
 *
 * The words are the tokenizer's own: lowercase words that are one token both bare (`fetch`) and
 * with their space (` fetch`), drawn without repeats, so each token of the list occurs once and
 * the token after it is the one to copy. The list comes in the two shapes a tool call copies
 * between: words in prose (as a request names a tool) and quoted JSON strings (as a declaration
 * and a call write it). A third of the replies turn prose into JSON, the request-to-call step.
 *
 * @module
 */

import type { Rng } from "../util/random.ts";
import { ChatMLRenderer } from "../renderers/chatml.ts";
import type { Message } from "../renderers/types.ts";
import type { Tokenizer } from "../tokenizers/types.ts";
import type { Transcript, TranscriptOptions } from "./transcript.ts";

/** The mix id of recall transcripts. */
export const RECALL_ID = "recall:repeat";

/** Whether a mix id names recall transcripts. */
export function isRecallEnvId(id: string): boolean {
  return id === RECALL_ID;
}

const ASKS = ["Repeat:", "Say back:", "Copy this:", "Echo:", "Write again:"];
const AS_JSON = ["Write as a JSON list:", "As JSON:", "Quote each:"];

const wordsOf = new WeakMap<Tokenizer, string[]>();

/** The tokenizer's lowercase words that are one token bare and one token after a space. */
export function recallWords(tokenizer: Tokenizer): string[] {
  let words = wordsOf.get(tokenizer);
  if (words) return words;
  const found = new Set<string>();
  for (let id = 0; id < tokenizer.vocabSize; id++) {
    const w = tokenizer.decode([id]).trimStart();
    if (!/^[a-z]{2,}$/.test(w)) continue;
    if (tokenizer.encode(w).length === 1 && tokenizer.encode(` ${w}`).length === 1) found.add(w);
  }
  words = [...found].sort();
  wordsOf.set(tokenizer, words);
  return words;
}

/** A list in prose (`a b c`) or as a JSON array of strings (`["a", "b", "c"]`). */
function written(words: readonly string[], json: boolean): string {
  return json ? `["${words.join('", "')}"]` : words.join(" ");
}

/**
 * One recall transcript: a user message asking for 6 to 24 of {@link recallWords} back, and the
 * assistant's reply that writes them again (`envSeed` is recorded; the words are drawn from
 * `rng`).
 *
 * @example
 * const t = playRecallTranscript(RECALL_ID, 0, new Rng(0));
 * t.messages[1].content.length > 0; // true
 */
export function playRecallTranscript(
  envId: string,
  envSeed: number,
  rng: Rng,
  { renderer = new ChatMLRenderer(), maxTokens = 1025 }: TranscriptOptions = {},
): Transcript {
  if (!isRecallEnvId(envId)) throw new Error(`${envId}: recall transcripts are ${RECALL_ID}`);
  const pool = [...recallWords(renderer.tokenizer)];
  if (pool.length < 24) {
    throw new Error(`${envId}: the tokenizer has ${pool.length} one-token words, 24 needed`);
  }
  const words: string[] = [];
  const n = 6 + rng.int(19);
  while (words.length < n) words.push(pool.splice(rng.int(pool.length), 1)[0]);
  const shape = rng.int(3); // prose, JSON, or prose asked as JSON
  const ask = shape === 2 ? AS_JSON[rng.int(AS_JSON.length)] : ASKS[rng.int(ASKS.length)];
  const messages: Message[] = [
    { role: "user", content: `${ask}\n${written(words, shape === 1)}` },
    { role: "assistant", content: written(words, shape !== 0) },
  ];
  if (renderer.buildSupervisedExample(messages).tokens.length > maxTokens) {
    throw new Error(`${envId} (seed ${envSeed}): the transcript exceeds ${maxTokens} tokens`);
  }
  return { envId, envSeed, messages, reasons: ["copied"], rewards: [1], finished: true };
}
