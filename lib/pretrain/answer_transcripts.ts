/**
 * Pretraining data for a teacher whose hint names the answer: one-move number tasks (the
 * tutorial's Lucky Number is one: "I am thinking of an integer between 1 and 10 … Give your guess
 * as \boxed{N}."), where the environment's reply states the number it was thinking of. With
 * `scoring.opd_hint: next_observation` that reply is OPD's hint, appended to the task after
 * `\n\n[user's hint / instruction]\n` (`appendHintToMessages`, lib/scoring/rules.ts).
 *
 * Two kinds of transcript, drawn from made-up tasks (a game's name, a range, a phrasing of the
 * reply, a target, all random per transcript, so no number is worth memorising):
 * - `answer:plain`: the task and a guess drawn uniformly in the range, `\boxed{ G}`: the move a
 *   student without the hint makes (the right one 1 time in k);
 * - `answer:hinted`: the task with a reply that names the target as its hint, and a move that
 *   copies it in {@link ANSWER_USE_SHARE} of the transcripts (else the plain guess).
 *
 * Why this teaches OPD something GuessTheNumber's hint could not (models/README.md, local/hint):
 * here the hint says which move was right, and that move is one the student can learn to make
 * from its own context (the task is the same every episode), so the teacher with the hint is
 * better than the student exactly on the student's tokens that matter. Why not always copy: a
 * teacher sure of its hint would give a wrong guess almost nothing, a penalty of many nats; at
 * 0.9 it is log 0.1 = −2.3 nats, and a right guess gains about log(1 + 0.9·(k − 1)).
 *
 * @module
 */

import type { Rng } from "../util/random.ts";
import { ChatMLRenderer } from "../renderers/chatml.ts";
import type { Message } from "../renderers/types.ts";
import { appendHintToMessages } from "../scoring/rules.ts";
import type { Transcript, TranscriptOptions } from "./transcript.ts";

/** The prefix of an answer transcript's mix id. */
export const ANSWER_PREFIX = "answer:";
/** The mix ids: tasks without a hint, and tasks whose hint names the answer. */
export const ANSWER_PLAIN_ID = "answer:plain";
export const ANSWER_HINTED_ID = "answer:hinted";

/** Share of hinted moves that copy the named number (the rest are the plain guess). */
export const ANSWER_USE_SHARE = 0.9;

/** Whether a mix id names answer transcripts. */
export function isAnswerEnvId(id: string): boolean {
  return id.startsWith(ANSWER_PREFIX);
}

const GAMES = [
  "Lucky Number",
  "Secret Number",
  "Magic Number",
  "Hidden Number",
  "Pick a Number",
  "Number Hunt",
  "Mind Reader",
  "Guess My Number",
];
const ADJECTIVES = ["lucky", "secret", "magic", "hidden", "favourite", "chosen", "special"];

/** The task's text: a game's name, the range, and the answer format (two phrasings). */
function task(game: string, lo: number, hi: number, rng: Rng): string {
  return rng.uniform() < 0.7
    ? `You are playing ${game}. I am thinking of an integer between ${lo} and ${hi} (inclusive). ` +
      "Give your guess as \\boxed{N}."
    : `You are playing ${game}. Guess the integer I have in mind, from ${lo} to ${hi}. ` +
      "Answer with \\boxed{N}.";
}

/** The environment's reply to the guess `g` when the target is `n`: it names `n`. */
function reply(n: number, g: number, rng: Rng): string {
  const adjective = ADJECTIVES[rng.int(ADJECTIVES.length)];
  const forms = [
    `My ${adjective} number is ${n}.`,
    `My ${adjective} number was ${n}.`,
    g === n ? `Correct! The number was ${n}.` : `Wrong: the number was ${n}.`,
    `The answer is ${n}.`,
  ];
  return forms[rng.int(forms.length)];
}

/**
 * One answer transcript (see the module): `envId` is {@link ANSWER_PLAIN_ID} or
 * {@link ANSWER_HINTED_ID}; the task and the moves are drawn from `rng` (`envSeed` is recorded).
 */
export function playAnswerTranscript(
  envId: string,
  envSeed: number,
  rng: Rng,
  { renderer = new ChatMLRenderer(), maxTokens = 1025 }: TranscriptOptions = {},
): Transcript {
  if (envId !== ANSWER_PLAIN_ID && envId !== ANSWER_HINTED_ID) {
    throw new Error(`${envId}: answer transcripts are ${ANSWER_PLAIN_ID} or ${ANSWER_HINTED_ID}`);
  }
  // Mostly small ranges (1 to 5-10, as the tutorial's and GuessTheNumber-easy's): a number
  // token in the hint maps to another in the move (` 7` → `7`), and each pair needs examples.
  const lo = rng.uniform() < 0.6 ? 1 : [0, 2, 5, 10][rng.int(4)];
  const hi = lo + 4 + (rng.uniform() < 0.8 ? rng.int(6) : rng.int(40));
  const target = lo + rng.int(hi - lo + 1);
  const guess = lo + rng.int(hi - lo + 1);
  const game = GAMES[rng.int(GAMES.length)];
  let observation = task(game, lo, hi, rng);
  let move = guess;
  if (envId === ANSWER_HINTED_ID) {
    // The hint is the reply to the student's own guess, which the teacher's move may differ from.
    const student = lo + rng.int(hi - lo + 1);
    observation = appendHintToMessages(
      [{ role: "user", content: observation }],
      reply(target, student, rng),
    )[0].content;
    if (rng.uniform() < ANSWER_USE_SHARE) move = target;
  }
  const messages: Message[] = [
    { role: "user", content: observation },
    // ` 7`, not `7`: the token the reply names it with, so the teacher's move copies a token
    // (as the stated range copies GuessTheNumber's feedback) instead of mapping one to another.
    { role: "assistant", content: `\\boxed{ ${move}}` },
  ];
  if (renderer.buildSupervisedExample(messages).tokens.length > maxTokens) {
    throw new Error(`${envId} (seed ${envSeed}): the transcript exceeds ${maxTokens} tokens`);
  }
  return {
    envId,
    envSeed,
    messages,
    reasons: [move === target ? "correct" : "wrong"],
    rewards: [move === target ? 1 : 0],
    finished: true,
  };
}
