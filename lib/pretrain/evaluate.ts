/**
 * How well a model plays each environment of the pretraining mix: success rate (the episode's
 * rewards sum to ≥ 1, i.e. solved), invalid-action rate (moves the environment rejects, or
 * replies not closed by `<|im_end|>`), and for GuessTheNumber how often a guess is consistent
 * with the feedback so far (whether the model reads the feedback at all). Long games can fill
 * the model's context before they end; such episodes stop there and are counted as such.
 *
 * Episodes are played as a run plays them (lib/rollout's {@link collectGroups}); each is
 * replayed on a fresh env with the same seed to recover every move's `info.reason`.
 *
 * @module
 */

import type { SamplingClient } from "../tinker/mod.ts";
import { makeBuiltin } from "../envs/registry.ts";
import { collectGroups, type Sampler } from "../rollout/mod.ts";
import { type Episode, isSolved } from "../rl/types.ts";
import type { AnyEnv } from "../envs/types.ts";
import { ChatMLRenderer } from "../renderers/chatml.ts";
import type { Tokenizer } from "../tokenizers/types.ts";
import { analyzeGuesses } from "../envs/guess_the_number.ts";
import { envFamily, LEGAL_REASONS } from "./players.ts";

/** The reasons an env gives for a move it cannot parse (the episode then ends with −0.1). */
const FORMAT_ERRORS = new Set(["invalid_action", "format_error"]);

/** Settings of an evaluation. */
export interface EvaluateOptions {
  /** Episodes per environment. */
  episodes: number;
  /** Episode i uses env seed `seed + i`; sampler seeds derive from `seed` (as a run's do). */
  seed: number;
  temperature: number;
  maxTokensPerTurn: number;
  /**
   * Episodes played at once (the sampler batches their requests). Above 4, sampling
   * `local/games` at 1024-token context ran out of jax-js's 4 GiB heap on this machine.
   */
  concurrency: number;
  /**
   * The model's context in tokens: an episode whose conversation fills it ends there, unsolved
   * (every local model's is 1024 but local/tiny's; lib/local/models.ts).
   */
  contextLength: number;
  /** The evaluated model's renderer (default ChatML over bytes, as `local/games`). */
  renderer?: ChatMLRenderer<Tokenizer>;
}

/**
 * Defaults: temperature 1.0, 40 tokens per move (the longest, a GuessTheNumber-hard move with its
 * range, is 31 bytes with `<|im_end|>`), 4 in flight, a 1024-token context (the games models').
 */
export const EVALUATE_DEFAULTS: EvaluateOptions = {
  episodes: 50,
  seed: 0,
  temperature: 1,
  maxTokensPerTurn: 40,
  concurrency: 4,
  contextLength: 1024,
};

/** One environment's results. */
export interface EnvEvaluation {
  envId: string;
  episodes: number;
  /** Episodes whose rewards sum to ≥ 1 (solved). */
  successRate: number;
  /** Moves the env did not accept as legal, or not closed by `<|im_end|>`, over all moves. */
  invalidActionRate: number;
  /** Episodes that ended on an unparseable move. */
  formatErrorRate: number;
  meanReward: number;
  meanTurns: number;
  /** Episodes cut off because the conversation filled the model's context (long games). */
  contextFullRate: number;
  /** GuessTheNumber only: in-range guesses consistent with all feedback so far, over guesses. */
  consistentGuessRate?: number;
  /**
   * GuessTheNumber only: per turn, the share of that turn's moves that were consistent guesses.
   * It shows how far the model combines feedback: turn 1 needs none, turn t needs t − 1 replies.
   */
  consistentByTurn?: number[];
}

/**
 * Plays episodes `seed + i` (i < `episodes`) of `envId`, each on a fresh env from `makeEnv`: the
 * pretraining evaluations' episodes, played by the shared rollout loop ({@link collectGroups},
 * one episode per group, `concurrency` at a time, sampler seeds derived from `seed` as a run's
 * are). An episode that fills the model's context (`contextLength`) ends there, as a run's
 * does; any other failure is an error naming the episode.
 */
export async function playEvaluationEpisodes(
  sampler: Sampler,
  envId: string,
  o: EvaluateOptions,
  renderer: ChatMLRenderer<Tokenizer>,
  makeEnv: () => AnyEnv,
): Promise<{ episode: Episode; index: number; contextFull: boolean }[]> {
  const res = await collectGroups(
    Array.from({ length: o.episodes }, (_, i) => ({ makeEnv, envSeed: o.seed + i, id: `${i}` })),
    sampler,
    {
      groupSize: 1,
      maxConcurrency: o.concurrency,
      maxTokensPerTurn: o.maxTokensPerTurn,
      maxTotalTokens: o.contextLength,
      temperature: o.temperature,
      seed: o.seed,
      renderer,
      failures: { onError: "drop_episode" },
    },
  );
  if (res.failed.length > 0) {
    const f = res.failed[0];
    throw new Error(`${envId} episode ${f.groupIndex}: ${f.message}`);
  }
  return res.groups.map((g) => {
    const episode = g.episodes[0];
    const last = episode.turns.at(-1);
    // Out of context: the next turn's prompt and reply would not fit (a reply cut short by
    // maxTokensPerTurn far from it is an unclosed move, not a full context).
    const contextFull = episode.stopReason === "max_tokens" && last !== undefined &&
      last.observationTokens.length + last.actionTokens.length + o.maxTokensPerTurn >
        o.contextLength;
    return { episode, index: Number(g.id), contextFull };
  });
}

/** Plays `episodes` episodes of `envId` and scores them. */
export async function evaluateEnv(
  sampler: SamplingClient,
  envId: string,
  options: Partial<EvaluateOptions> = {},
): Promise<EnvEvaluation> {
  const o = { ...EVALUATE_DEFAULTS, ...options };
  const renderer = o.renderer ?? new ChatMLRenderer();
  const legal = new Set(LEGAL_REASONS[envFamily(envId)]);
  const eos = renderer.tokenizer.eosTokenId;
  let solved = 0, moves = 0, invalid = 0, formatErrors = 0, reward = 0, turns = 0;
  let guesses = 0, consistent = 0, contextFull = 0;
  const byTurn: Array<{ moves: number; consistent: number }> = [];
  const played = await playEvaluationEpisodes(
    sampler,
    envId,
    o,
    renderer,
    () => makeBuiltin(envId),
  );
  for (const { episode: ep, index, contextFull: full } of played) {
    if (full) contextFull++;
    if (isSolved(ep.totalReward)) solved++;
    reward += ep.totalReward;
    turns += ep.turns.length;
    // Replay on a fresh env with the same seed: the same moves give the same reasons.
    const env = makeBuiltin(envId);
    const { observation } = env.reset(o.seed + index);
    const history: Array<{ action: string; feedback: string }> = [];
    for (const t of ep.turns) {
      const step = env.step(t.action.content);
      moves++;
      if (FORMAT_ERRORS.has(String(step.info.reason))) formatErrors++;
      if (!legal.has(String(step.info.reason)) || !t.actionTokens.includes(eos)) invalid++;
      history.push({ action: t.action.content, feedback: step.observation });
    }
    if (envFamily(envId) === "GuessTheNumber") {
      const g = analyzeGuesses(observation, history);
      guesses += g.guesses;
      consistent += g.consistent;
      g.consistentAt.forEach((ok, t) => {
        byTurn[t] ??= { moves: 0, consistent: 0 };
        byTurn[t].moves++;
        if (ok) byTurn[t].consistent++;
      });
    }
  }
  const n = o.episodes;
  const out: EnvEvaluation = {
    envId,
    episodes: n,
    successRate: solved / n,
    invalidActionRate: moves ? invalid / moves : 0,
    formatErrorRate: formatErrors / n,
    meanReward: reward / n,
    meanTurns: turns / n,
    contextFullRate: contextFull / n,
  };
  if (envFamily(envId) === "GuessTheNumber") {
    out.consistentGuessRate = consistent / (guesses || 1);
    out.consistentByTurn = byTurn.map((t) => t.consistent / t.moves);
  }
  return out;
}

/** Evaluates several environments one after another. */
export async function evaluateEnvs(
  sampler: SamplingClient,
  envIds: readonly string[],
  options: Partial<EvaluateOptions> = {},
  onEnv?: (e: EnvEvaluation) => void,
): Promise<EnvEvaluation[]> {
  const out: EnvEvaluation[] = [];
  for (const id of envIds) {
    const e = await evaluateEnv(sampler, id, options);
    onEnv?.(e);
    out.push(e);
  }
  return out;
}

/** A markdown table of evaluations (the model card's). */
export function evaluationTable(results: readonly EnvEvaluation[]): string {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const rows = results.map((r) =>
    `| ${r.envId} | ${r.episodes} | ${pct(r.successRate)} | ${pct(r.invalidActionRate)} | ` +
    `${pct(r.formatErrorRate)} | ${r.meanReward.toFixed(3)} | ${r.meanTurns.toFixed(1)} | ` +
    `${pct(r.contextFullRate)} | ` +
    `${r.consistentGuessRate === undefined ? "–" : pct(r.consistentGuessRate)} | ` +
    `${r.consistentByTurn?.map((x) => (100 * x).toFixed(0)).join(" / ") ?? "–"} |`
  );
  return [
    "| environment | episodes | success | invalid actions | format errors | mean reward | mean turns | context full | consistent guesses | consistent by turn (%) |",
    "|---|---|---|---|---|---|---|---|---|---|",
    ...rows,
  ].join("\n");
}
