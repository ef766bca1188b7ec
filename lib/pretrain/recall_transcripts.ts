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
 * A second kind ({@link RECALL_NAMES_ID}) lists snake_case names made of a few such words
 * (`set_order write_weather set_weather`). Its pieces recur across the list, so the token before
 * the one to copy is not enough (`_` is followed by `order` and by `weather`): the copy must match
 * two tokens back, as a tool's name does in a declaration (models/README.md, runs 11–12).
 *
 * A third kind ({@link RECALL_TOOLS_ID}) asks about the tools declared in the system message, as
 * a rollout declares them (names of one or two of the words above): which tools there are, and which
 * arguments a named one takes. Every reply token is read from a declaration, found by the name
 * the question gives: the look-up a call makes when the request does not name its arguments.
 *
 * A fourth kind ({@link RECALL_RECORDS_ID}) is that look-up at short range: a few JSON records
 * (`{"name": "set_order", "type": "moon"}`), then questions for every value of one key, or for
 * one record's value by another's. A value follows `key`, `":`, `␣"`, and the last two precede
 * every value, so the copy must match three tokens back: the step a declaration's name needs,
 * in 60 tokens instead of 300.
 *
 * A fifth kind ({@link RECALL_SPELLED_ID}) is the names and the tools kinds with pieces of made-up
 * letters (`lhxxj_order`), which the tokenizer spells one letter a token. Such a piece's letters
 * repeat (`x x`), so each letter is found by the several before it, a copy of many tokens where a
 * word's is one: the unseen tools' bench missed every task with such a name (12 of 64, run 21).
 * A sixth ({@link RECALL_LETTERS_ID}) is the first kind's lists with made-up words (`qyr ttue`):
 * the spelled copy without pieces recurring across names.
 *
 * @module
 */

import type { Rng } from "../util/random.ts";
import { ChatMLRenderer } from "../renderers/chatml.ts";
import type { Message } from "../renderers/types.ts";
import type { Tokenizer } from "../tokenizers/types.ts";
import { pyJson } from "../renderers/parse.ts";
import type { Transcript, TranscriptOptions } from "./transcript.ts";
import { madeUpLetters, toolTask, type UnseenToolTask } from "./unseen_tools.ts";

/** The mix id of recall transcripts. */
export const RECALL_ID = "recall:repeat";

/** The mix id of recall transcripts whose lists are snake_case names of recurring pieces. */
export const RECALL_NAMES_ID = "recall:names";

/** The mix id of questions about the declared tools, answered from their declarations. */
export const RECALL_TOOLS_ID = "recall:tools";

/** The mix id of questions about a few JSON records, answered from them. */
export const RECALL_RECORDS_ID = "recall:records";

/** The mix id of the names and tools kinds with pieces of made-up letters. */
export const RECALL_SPELLED_ID = "recall:spelled";

/** The mix id of recall lists of made-up words spelled in letters (`qyr ttue mddw`). */
export const RECALL_LETTERS_ID = "recall:letters";

/** Every recall kind's mix id. */
export const RECALL_IDS: readonly string[] = [
  RECALL_ID,
  RECALL_NAMES_ID,
  RECALL_TOOLS_ID,
  RECALL_RECORDS_ID,
  RECALL_SPELLED_ID,
  RECALL_LETTERS_ID,
];

/**
 * Whether a mix id names recall transcripts (of words, names, declared tools or records, with
 * or without made-up letters).
 */
export function isRecallEnvId(id: string): boolean {
  return RECALL_IDS.includes(id);
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

/** A piece of a spelled name: two to seven made-up letters in half the draws, else a word. */
function spelledPiece(words: readonly string[], rng: Rng): string {
  return rng.uniform() < 0.5 ? madeUpLetters(rng, 2, 7) : words[rng.int(words.length)];
}

/**
 * 4 to 14 distinct snake_case names, each of one to three distinct pieces (mostly two) drawn from
 * 3 to 8 words of `pool`, so a piece recurs across names and a copy must match two tokens back.
 * `spelled`: each piece is made-up letters instead in half the draws.
 */
function recallNames(pool: string[], rng: Rng, spelled = false): string[] {
  const pieces: string[] = [];
  const k = 3 + rng.int(6);
  while (pieces.length < k) {
    const word = pool.splice(rng.int(pool.length), 1)[0];
    pieces.push(spelled && rng.uniform() < 0.5 ? madeUpLetters(rng, 2, 7) : word);
  }
  const names = new Set<string>();
  const n = 4 + rng.int(11);
  // A small piece set has fewer distinct names than asked for: stop after enough tries.
  for (let tries = 0; names.size < n && tries < 8 * n; tries++) {
    const u = rng.uniform();
    const len = u < 0.25 ? 1 : u < 0.8 ? 2 : 3;
    const left = [...pieces];
    names.add(Array.from({ length: len }, () => left.splice(rng.int(left.length), 1)[0]).join("_"));
  }
  return [...names];
}

/**
 * One to four tools as the unseen tools declare them, named by one or two of `words` (so each
 * piece is one token and can be found by the two before it), or, `spelled`, by pieces of which
 * half are made-up letters (found by the several letters before).
 */
export function declaredTools(words: readonly string[], rng: Rng, spelled = false): UnseenToolTask {
  const piece = () => spelled ? spelledPiece(words, rng) : words[rng.int(words.length)];
  return toolTask(
    rng,
    1 + rng.int(4),
    () => rng.uniform() < 0.4 ? piece() : `${piece()}_${piece()}`,
    () => 1,
  );
}

const ASK_TOOLS = ["Which tools can you call?", "List the tools.", "Name every tool."];
const ASK_ARGUMENTS = [
  (t: string) => `What arguments does ${t} take?`,
  (t: string) => `List the arguments of ${t}.`,
  (t: string) => `Which arguments has the ${t} tool?`,
];

/**
 * Questions about declared tools: the tool list first in half of the transcripts, then the
 * arguments of one to three distinct tools (in the order they were drawn), each answered as a JSON
 * list copied from the declarations.
 */
function toolQuestions(rng: Rng, renderer: ChatMLRenderer<Tokenizer>, spelled: boolean): Message[] {
  const { tools } = declaredTools(recallWords(renderer.tokenizer), rng, spelled);
  const turns: Message[] = [];
  const ask = (q: string, answer: string[]) =>
    turns.push({ role: "user", content: q }, { role: "assistant", content: pyJson(answer) });
  if (rng.uniform() < 0.5) ask(ASK_TOOLS[rng.int(ASK_TOOLS.length)], tools.map((t) => t.name));
  const left = [...tools];
  for (let n = Math.min(left.length, 1 + rng.int(3)); n > 0; n--) {
    const tool = left.splice(rng.int(left.length), 1)[0];
    const properties = (tool.parameters as { properties?: Record<string, unknown> }).properties;
    ask(ASK_ARGUMENTS[rng.int(ASK_ARGUMENTS.length)](tool.name), Object.keys(properties ?? {}));
  }
  return renderer.declareTools(turns, tools);
}

const RECORD_KEYS = ["name", "type", "description", "id", "kind", "value", "label"];

/**
 * Three to eight records of two or three keys (the same keys, in the same order, in each), with
 * distinct values of one or two words; then one to three questions: every value of a key, or the
 * value of a key in the record whose value of another key is named.
 */
function recordQuestions(words: readonly string[], rng: Rng): Message[] {
  const keys: string[] = [];
  const left = [...RECORD_KEYS];
  for (let k = 2 + rng.int(2); k > 0; k--) keys.push(left.splice(rng.int(left.length), 1)[0]);
  const values = new Set<string>();
  const n = 3 + rng.int(6);
  const piece = () => words[rng.int(words.length)];
  while (values.size < n * keys.length) {
    values.add(rng.uniform() < 0.5 ? piece() : `${piece()}_${piece()}`);
  }
  const all = [...values];
  const records = Array.from(
    { length: n },
    (_, i) => Object.fromEntries(keys.map((key, j) => [key, all[i * keys.length + j]])),
  );
  const turns: Message[] = [];
  const asked = new Set<string>();
  // A question asked twice is answered by copying the first answer: draw again instead.
  for (let q = 1 + rng.int(3), tries = 0; asked.size < q && tries < 20; tries++) {
    const key = keys[rng.int(keys.length)];
    let question: string, answer: string[];
    if (rng.uniform() < 0.5) {
      question = `List every ${key}.`;
      answer = records.map((r) => r[key]);
    } else {
      const by = keys.find((k) => k !== key)!;
      const r = records[rng.int(n)];
      question = `What is the ${key} of the record whose ${by} is ${r[by]}?`;
      answer = [r[key]];
    }
    if (asked.has(question)) continue;
    asked.add(question);
    turns.push({ role: "user", content: question }, { role: "assistant", content: pyJson(answer) });
  }
  turns[0] = { role: "user", content: `${records.map(pyJson).join("\n")}\n${turns[0].content}` };
  return turns;
}

/** A list in prose (`a b c`) or as a JSON array of strings (`["a", "b", "c"]`). */
function written(words: readonly string[], json: boolean): string {
  return json ? pyJson(words) : words.join(" ");
}

/**
 * One recall transcript: a user message asking for 6 to 24 of {@link recallWords} back (or, for
 * {@link RECALL_NAMES_ID}, 4 to 14 names made of them), and the assistant's reply that writes
 * them again (`envSeed` is recorded; the words are drawn from `rng`). For
 * {@link RECALL_TOOLS_ID}, tools made up from those words, declared, and questions about them;
 * for {@link RECALL_RECORDS_ID}, records of those words and questions about them; for
 * {@link RECALL_SPELLED_ID}, names or tools with pieces of made-up letters; for
 * {@link RECALL_LETTERS_ID}, 3 to 12 distinct made-up words of 2 to 7 letters said back.
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
  if (!isRecallEnvId(envId)) {
    throw new Error(`${envId}: recall transcripts are ${RECALL_IDS.join(", ")}`);
  }
  const fits = (messages: Message[]) => {
    if (renderer.buildSupervisedExample(messages).tokens.length > maxTokens) {
      throw new Error(`${envId} (seed ${envSeed}): the transcript exceeds ${maxTokens} tokens`);
    }
    return { envId, envSeed, messages, reasons: ["copied"], rewards: [1], finished: true };
  };
  // A spelled transcript is a tools one in half the draws, a names one in the other half.
  const spelled = envId === RECALL_SPELLED_ID;
  if (envId === RECALL_TOOLS_ID || (spelled && rng.uniform() < 0.5)) {
    return fits(toolQuestions(rng, renderer, spelled));
  }
  if (envId === RECALL_RECORDS_ID) {
    return fits(recordQuestions(recallWords(renderer.tokenizer), rng));
  }
  const pool = [...recallWords(renderer.tokenizer)];
  if (pool.length < 24) {
    throw new Error(`${envId}: the tokenizer has ${pool.length} one-token words, 24 needed`);
  }
  const words: string[] = [];
  if (envId === RECALL_NAMES_ID || spelled) words.push(...recallNames(pool, rng, spelled));
  else if (envId === RECALL_LETTERS_ID) {
    const made = new Set<string>();
    const n = 3 + rng.int(10);
    while (made.size < n) made.add(madeUpLetters(rng, 2, 7));
    words.push(...made);
  } else {
    const n = 6 + rng.int(19);
    while (words.length < n) words.push(pool.splice(rng.int(pool.length), 1)[0]);
  }
  const shape = rng.int(3); // prose, JSON, or prose asked as JSON
  const ask = shape === 2 ? AS_JSON[rng.int(AS_JSON.length)] : ASKS[rng.int(ASKS.length)];
  const messages: Message[] = [
    { role: "user", content: `${ask}\n${written(words, shape === 1)}` },
    { role: "assistant", content: written(words, shape !== 0) },
  ];
  return fits(messages);
}
