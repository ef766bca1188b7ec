/**
 * Format players: agents that make valid but non-strategic moves, whose episodes become the
 * pretraining transcripts of `local/games`. The base model should learn each environment's
 * action format and to read its feedback, and leave the strategy (bisection, deduction,
 * planning) for RL to find, so RL starts from a model that plays legally but not well.
 *
 * - GuessTheNumber: states the range the feedback still allows (a one-line chain of thought,
 *   `Above 3, below 11.`), then guesses uniformly inside it (it uses feedback, it does not
 *   bisect).
 * - Board and word games: a uniform move among the legal ones, found by trying candidates on a
 *   copy of the environment (`spawn(true)`), so legality is the environment's own rule.
 * - Arithmetic: the correct answer (a verifier task; the format is the point).
 *
 * @module
 */

import type { Rng } from "../util/random.ts";
import type { SyncEnv } from "../envs/types.ts";

/** Chooses one action per turn of one episode; made fresh for each episode. */
export interface FormatPlayer {
  /**
   * The next action. `env` is the live environment (players only try moves on copies of it);
   * `observation` is what the environment said last.
   */
  act(env: SyncEnv, observation: string, rng: Rng): string;
}

/** The move reasons (`info.reason`) each family counts as legal: anything else is a mistake. */
export const LEGAL_REASONS: Readonly<Record<string, readonly string[]>> = {
  GuessTheNumber: ["wrong", "correct"],
  Mastermind: ["scored", "correct"],
  Hangman: ["hit", "miss", "correct"],
  TowerofHanoi: ["moved", "solved"],
  Minesweeper: ["revealed", "cleared", "mine", "flag"],
  FifteenPuzzle: ["moved", "solved"],
  Arithmetic: ["correct"],
};

/** The family of an env id: `game:Mastermind-v0-easy` → `Mastermind`. */
export function envFamily(envId: string): string {
  const m = envId.match(/^[a-z]+:([A-Za-z]+)-v\d+/);
  if (!m) throw new Error(`not a registry id: ${JSON.stringify(envId)}`);
  return m[1];
}

/** Options of {@link formatPlayer}. */
export interface FormatPlayerOptions {
  /** Share of GuessTheNumber episodes played by bisection (see {@link ConsistentGuesser}). */
  bisectShare?: number;
}

/** A new player for one episode of `envId`. */
export function formatPlayer(envId: string, opts: FormatPlayerOptions = {}): FormatPlayer {
  const family = envFamily(envId);
  switch (family) {
    case "GuessTheNumber":
      return new ConsistentGuesser(opts.bisectShare ?? 0);
    case "Arithmetic":
      return { act: (_env, obs) => `\\boxed{${solveArithmetic(obs)}}` };
    case "Mastermind":
      return legalMovePlayer(family, mastermindCandidates);
    case "Hangman":
      return withWordGuess(legalMovePlayer(family, hangmanCandidates));
    case "TowerofHanoi":
      return legalMovePlayer(family, () => HANOI_MOVES);
    case "Minesweeper":
      return legalMovePlayer(family, minesweeperCandidates);
    case "FifteenPuzzle":
      return legalMovePlayer(family, () => SLIDES);
    default:
      throw new Error(`no format player for ${envId}`);
  }
}

/**
 * GuessTheNumber: guesses uniformly among the integers the feedback so far allows, after
 * stating that range with exclusive bounds (`Above 3, below 11. \boxed{7}`). The range comes
 * from the rules text; each "higher/lower than N" narrows it.
 *
 * Why the stated range: a byte-level model of 1 M parameters imitating bare guesses learned
 * to read the latest reply but not to combine several (turn-4 guesses were consistent only
 * half the time), which caps what RL can reach. Written out, the range turns "combine every
 * reply" into "copy one bound from the latest reply and the other from my last move", and the
 * exclusive bounds are the numbers the replies name, so no ±1 arithmetic is needed. Which
 * number to pick inside the range, the strategy, is still left to RL.
 *
 * With `bisectShare` > 0, that share of episodes is played by bisection instead (the lower
 * middle of the range on every move; the choice is made once per episode, as a player's
 * style): the strategy is then in the base model's distribution but rare, and RL has to find
 * and keep it, as RL on a language model sharpens what pretraining made possible.
 */
export class ConsistentGuesser implements FormatPlayer {
  #lo = NaN;
  #hi = NaN;
  #bisect = false;

  constructor(readonly bisectShare = 0) {
    if (!(bisectShare >= 0 && bisectShare <= 1)) {
      throw new RangeError(`bisectShare must be in [0, 1], got ${bisectShare}`);
    }
  }

  act(_env: SyncEnv, observation: string, rng: Rng): string {
    const range = observation.match(/between (\d+) and (\d+)/);
    if (Number.isNaN(this.#lo)) {
      if (!range) throw new Error("GuessTheNumber: the first observation states no range");
      [this.#lo, this.#hi] = [Number(range[1]), Number(range[2])];
      // Draw only when asked, so transcripts with share 0 stay those of earlier runs.
      this.#bisect = this.bisectShare > 0 && rng.uniform() < this.bisectShare;
    }
    const fb = observation.match(/The number is (higher|lower) than (-?\d+)/);
    if (fb) {
      const n = Number(fb[2]);
      if (fb[1] === "higher") this.#lo = Math.max(this.#lo, n + 1);
      else this.#hi = Math.min(this.#hi, n - 1);
    }
    const guess = this.#bisect
      ? Math.floor((this.#lo + this.#hi) / 2)
      : this.#lo + rng.int(this.#hi - this.#lo + 1);
    return `Above ${this.#lo - 1}, below ${this.#hi + 1}. \\boxed{${guess}}`;
  }

  /** The integers still consistent with the feedback, as `[lo, hi]`. */
  get consistent(): [number, number] {
    return [this.#lo, this.#hi];
  }
}

/**
 * A player that shuffles the candidate actions and plays the first one the environment
 * accepts as legal (tried on a copy, so the live episode is untouched).
 */
function legalMovePlayer(
  family: string,
  candidates: (observation: string, rng: Rng) => readonly string[],
): FormatPlayer {
  const legal = new Set(LEGAL_REASONS[family]);
  let first = "";
  return {
    act(env, observation, rng) {
      first ||= observation;
      const options = shuffle([...candidates(first, rng)], rng);
      for (const action of options) {
        const trial = env.spawn(true).step(action);
        if (legal.has(String(trial.info.reason))) return action;
      }
      throw new Error(`${env.id}: no legal move among ${options.length} candidates`);
    },
  };
}

const HANOI_MOVES = ["A B", "A C", "B A", "B C", "C A", "C B"].map((m) => `\\boxed{${m}}`);
const SLIDES = ["up", "down", "left", "right"].map((m) => `\\boxed{${m}}`);
const LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/** Mastermind: codes of distinct digits in range (the rules text gives length and range). */
function mastermindCandidates(intro: string, rng: Rng): string[] {
  const m = intro.match(/code of (\d+) distinct digits, each from 1 to (\d+)/);
  if (!m) throw new Error("Mastermind: the rules text states no code length");
  const length = Number(m[1]), numbers = Number(m[2]);
  // A handful of random codes is plenty: a repeat is the only illegal one, and rare.
  return Array.from({ length: 64 }, () => {
    const pool = Array.from({ length: numbers }, (_, i) => i + 1);
    const code = Array.from({ length }, () => pool.splice(rng.int(pool.length), 1)[0]);
    return `\\boxed{${code.join(" ")}}`;
  });
}

/** Hangman: single letters (naming the word is {@link withWordGuess}'s job). */
function hangmanCandidates(): string[] {
  return LETTERS.split("").map((c) => `\\boxed{${c}}`);
}

/** Minesweeper: reveal any cell (mostly) or flag one, as the rules text sizes the grid. */
function minesweeperCandidates(intro: string, rng: Rng): string[] {
  const m = intro.match(/on a (\d+)x(\d+) grid/);
  if (!m) throw new Error("Minesweeper: the rules text states no grid size");
  const rows = Number(m[1]), cols = Number(m[2]);
  const verb = rng.uniform() < 0.1 ? "flag" : "reveal";
  const out: string[] = [];
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) out.push(`\\boxed{${verb} ${r} ${c}}`);
  }
  return out;
}

/** Hangman's word, when the board in an observation shows every letter. */
export function revealedWord(observation: string): string | null {
  const board = observation.match(/Word: ([A-Z_ ]+)\s*$/)?.[1].trim();
  return board && !board.includes("_") ? board.replace(/ /g, "") : null;
}

/**
 * Wraps a player so Hangman names the word once the board shows every letter: reading the
 * board, not strategy, and the game only ends when the word is named.
 */
export function withWordGuess(player: FormatPlayer): FormatPlayer {
  return {
    act(env, observation, rng) {
      const word = revealedWord(observation);
      return word ? `\\boxed{${word}}` : player.act(env, observation, rng);
    },
  };
}

/**
 * The value of the arithmetic task's expression (`Compute (17 - 4) * 6 + 9. …`), with the
 * usual precedence (the task parenthesises so that this equals its left-to-right value).
 */
export function solveArithmetic(observation: string): number {
  const m = observation.match(/^Compute ([\d\s()+\-*]+)\./);
  if (!m) throw new Error(`not an arithmetic question: ${JSON.stringify(observation)}`);
  const tokens = m[1].match(/\d+|[()+\-*]/g) ?? [];
  let i = 0;
  const atom = (): number => {
    const t = tokens[i++];
    if (t === "(") {
      const v = sum();
      i++; // ")"
      return v;
    }
    return Number(t);
  };
  const product = (): number => {
    let v = atom();
    while (tokens[i] === "*") {
      i++;
      v *= atom();
    }
    return v;
  };
  const sum = (): number => {
    let v = product();
    while (tokens[i] === "+" || tokens[i] === "-") {
      const op = tokens[i++];
      v = op === "+" ? v + product() : v - product();
    }
    return v;
  };
  return sum();
}

function shuffle<T>(xs: T[], rng: Rng): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}
