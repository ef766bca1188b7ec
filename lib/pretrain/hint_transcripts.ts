/**
 * Pretraining data for a teacher that uses its hint: GuessTheNumber transcripts whose last move
 * was written with OPD's hindsight hint in context, exactly as `opd` and `combine` show it to the
 * teacher. With the default `scoring.opd_hint: next_observation`, the hint of a turn is the
 * environment's reply to the move the student sampled there (`The number is higher than 7. 2
 * turns left.`, `Correct! The number was 7.`, `… Out of turns: the number was 4.`), appended to
 * the turn's last user message after `\n\n[user's hint / instruction]\n`
 * (`appendHintToMessages`, lib/scoring/rules.ts).
 *
 * A transcript: an episode played by the format player up to a turn t, then a student's move G
 * at turn t (drawn as the student draws: mostly a guess in the range the feedback allows,
 * sometimes one outside it, a repeat, or no guess), the reply G would get as the hint, and the
 * teacher's move: the same stated range (the hint says nothing about the range the feedback so
 * far allows, and the student's range is right when it copies the feedback), then a number that
 * uses the hint in {@link HINT_USE_SHARE} of the transcripts (the target when the hint names it;
 * else a number the hint leaves possible, never G) and the format player's own choice otherwise.
 * The transcript ends at that move: the teacher's context has the hint only on its last message.
 *
 * Why the teacher uses its hint only in half of the moves: OPD pushes each sampled token by
 * `teacher − student`, and on a wrong guess a teacher sure of its hint gives G almost nothing,
 * a penalty of many nats that no correct guess balances (the target is uniform, so every guess
 * is wrong most of the time); mass then flows to tokens the teacher never saw. A teacher that
 * keeps half its no-hint distribution bounds the wrong guess's penalty at log 0.5 = −0.69 nats
 * and gives a right guess about log(1 + k/2) (k numbers left), and leaves every other token
 * where the student has it.
 *
 * @module
 */

import type { Rng } from "../util/random.ts";
import { makeBuiltin } from "../envs/registry.ts";
import type { SyncEnv } from "../envs/types.ts";
import { ChatMLRenderer } from "../renderers/chatml.ts";
import type { Message } from "../renderers/types.ts";
import { appendHintToMessages } from "../scoring/rules.ts";
import { ConsistentGuesser } from "./players.ts";
import type { Transcript, TranscriptOptions } from "./transcript.ts";

/** The prefix of a hint transcript's mix id: `hint:game:GuessTheNumber-v0-easy`. */
export const HINT_PREFIX = "hint:";

/** Share of hinted moves that use the hint (the rest are the no-hint move). */
export const HINT_USE_SHARE = 0.5;

/** Whether a mix id names hint transcripts. */
export function isHintEnvId(id: string): boolean {
  return id.startsWith(HINT_PREFIX);
}

/** What a student's move at the hinted turn is: how the hint is drawn. */
type StudentMove = "consistent" | "anywhere" | "out_of_range" | "no_guess";

/** The student's move kinds and their shares (a student that mostly reads the feedback). */
const STUDENT_MOVES: ReadonlyArray<[StudentMove, number]> = [
  ["consistent", 0.8],
  ["anywhere", 0.12],
  ["out_of_range", 0.03],
  ["no_guess", 0.05],
];

/** The student's move, as text: a stated range and a guess (or a move without a guess). */
function studentMove(
  kind: StudentMove,
  [lo, hi]: [number, number],
  [min, max]: [number, number],
  rng: Rng,
): string {
  const stated = `Above ${lo - 1}, below ${hi + 1}. `;
  switch (kind) {
    case "consistent":
      return `${stated}\\boxed{${lo + rng.int(hi - lo + 1)}}`;
    case "anywhere":
      return `${stated}\\boxed{${min + rng.int(max - min + 1)}}`;
    case "out_of_range":
      return `${stated}\\boxed{${rng.uniform() < 0.5 ? min - 1 : max + 1}}`;
    case "no_guess":
      return `${stated}`;
  }
}

function drawKind(rng: Rng): StudentMove {
  let u = rng.uniform();
  for (const [kind, share] of STUDENT_MOVES) {
    u -= share;
    if (u < 0) return kind;
  }
  return "consistent";
}

/**
 * The numbers in `[lo, hi]` that a hint leaves possible: the target alone when the hint names
 * it, the side of G the hint points to, or the whole range but G when the hint says nothing of
 * the target (a repeat, a guess out of range, no guess).
 */
export function hintedRange(hint: string, [lo, hi]: [number, number]): number[] {
  const named = hint.match(/(?:Correct! The number was|the number was) (-?\d+)/);
  if (named) return [Number(named[1])];
  const all = Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
  const side = hint.match(/The number is (higher|lower) than (-?\d+)/);
  if (side) {
    const g = Number(side[2]);
    return all.filter((n) => side[1] === "higher" ? n > g : n < g);
  }
  const g = hint.match(/(?:already guessed|^)\s*(-?\d+)/)?.[1];
  return all.filter((n) => String(n) !== g);
}

/**
 * Plays a GuessTheNumber episode to a turn drawn uniformly from those it reaches, and ends it
 * there with a hinted move (see the module). `envId` is the mix id (`hint:game:…`).
 */
export function playHintTranscript(
  envId: string,
  envSeed: number,
  rng: Rng,
  { renderer = new ChatMLRenderer(), bisectShare, maxTokens = 1025 }: TranscriptOptions = {},
): Transcript {
  const gameId = envId.slice(HINT_PREFIX.length);
  if (!/^game:GuessTheNumber-v0-(easy|hard)$/.test(gameId)) {
    throw new Error(`${envId}: hint transcripts are written for GuessTheNumber easy and hard`);
  }
  const env = makeBuiltin(gameId) as SyncEnv;
  const player = new ConsistentGuesser(bisectShare ?? 0);
  let { observation } = env.reset(envSeed);
  const range = observation.match(/between (\d+) and (\d+)/)!;
  const bounds: [number, number] = [Number(range[1]), Number(range[2])];
  const hintedTurn = rng.int(env.maxTurns);
  const messages: Message[] = [];
  const reasons: string[] = [], rewards: number[] = [];
  for (let t = 0;; t++) {
    const move = player.act(env, observation, rng);
    const isLast = t === hintedTurn;
    if (!isLast) {
      const step = env.step(move);
      if (!(step.terminated || step.truncated)) {
        messages.push({ role: "user", content: observation }, { role: "assistant", content: move });
        reasons.push(String(step.info.reason));
        rewards.push(step.reward);
        observation = step.observation;
        continue;
      }
      // The episode would end before the hinted turn: hint this turn instead. The env is spent,
      // so the student's move is tried on an env replayed to here.
    }
    const live = isLast ? env : replay(gameId, envSeed, messages);
    const consistent = player.consistent;
    const student = studentMove(drawKind(rng), consistent, bounds, rng);
    const hint = live.spawn(true).step(student).observation;
    const possible = hintedRange(hint, consistent);
    const teacher = rng.uniform() < HINT_USE_SHARE && possible.length > 0
      ? move.replace(/\\boxed\{-?\d+\}$/, `\\boxed{${possible[rng.int(possible.length)]}}`)
      : move;
    const hinted = appendHintToMessages([{ role: "user", content: observation }], hint);
    const turn: Message[] = [
      { role: "user", content: hinted[0].content },
      { role: "assistant", content: teacher },
    ];
    if (renderer.buildSupervisedExample([...messages, ...turn]).tokens.length > maxTokens) {
      throw new Error(
        `${envId} (seed ${envSeed}): a hinted transcript exceeds ${maxTokens} tokens`,
      );
    }
    messages.push(...turn);
    const step = live.step(teacher);
    reasons.push(String(step.info.reason));
    rewards.push(step.reward);
    return {
      envId,
      envSeed,
      messages,
      reasons,
      rewards,
      finished: step.terminated || step.truncated,
    };
  }
}

/** A fresh env of `gameId` from `seed`, replayed through the moves of `messages`. */
function replay(gameId: string, seed: number, messages: readonly Message[]): SyncEnv {
  const env = makeBuiltin(gameId) as SyncEnv;
  env.reset(seed);
  for (const m of messages) if (m.role === "assistant") env.step(m.content as string);
  return env;
}
