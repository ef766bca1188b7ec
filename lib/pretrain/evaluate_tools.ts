/**
 * How well a model plays the tool environments of `local/tools`' mix: the episodes RL plays
 * ({@link runEpisode}, tools declared in the system message, stopping at `</tool_call>`), scored
 * by success (the episode's rewards sum to ≥ 1), valid calls (calls that parsed and that the
 * environment ran, over turns: a turn without a call is not valid) and sampled tokens per turn.
 *
 * @module
 */

import type { Sampler } from "../rollout/episode.ts";
import { ChatMLRenderer } from "../renderers/chatml.ts";
import type { Tokenizer } from "../tokenizers/types.ts";
import { EVALUATE_DEFAULTS, type EvaluateOptions, playEvaluationEpisodes } from "./evaluate.ts";
import { isSolved } from "../rl/types.ts";
import { makeToolEnv } from "./tool_transcripts.ts";

/** One tool environment's results. */
export interface ToolEnvEvaluation {
  envId: string;
  episodes: number;
  /** Episodes whose rewards sum to ≥ 1. */
  successRate: number;
  /** Tool calls that parsed and ran, over turns (at most one counted per turn). */
  validCallRate: number;
  meanReward: number;
  meanTurns: number;
  /** Mean sampled tokens per turn (the call, with its `</tool_call>`). */
  tokensPerTurn: number;
  /** Episodes cut off because the conversation filled the model's context. */
  contextFullRate: number;
}

/**
 * Defaults: those of the text games' evaluation, with 96 tokens per turn (a WhoDunIt
 * submission is about 40 tokens of the tools tokenizer).
 */
export const EVALUATE_TOOLS_DEFAULTS: EvaluateOptions = {
  ...EVALUATE_DEFAULTS,
  maxTokensPerTurn: 96,
};

/** Plays `episodes` episodes of a tool environment (episode i: env seed `seed + i`). */
export async function evaluateToolEnv(
  sampler: Sampler,
  envId: string,
  options: Partial<EvaluateOptions> = {},
): Promise<ToolEnvEvaluation> {
  const o = { ...EVALUATE_TOOLS_DEFAULTS, ...options };
  const renderer = o.renderer ?? new ChatMLRenderer<Tokenizer>();
  let solved = 0, valid = 0, turns = 0, reward = 0, tokens = 0, contextFull = 0;
  const played = await playEvaluationEpisodes(
    sampler,
    envId,
    o,
    renderer,
    () => makeToolEnv(envId),
  );
  for (const { episode: ep, contextFull: full } of played) {
    if (full) contextFull++;
    if (isSolved(ep.totalReward)) solved++;
    reward += ep.totalReward;
    turns += ep.turns.length;
    const ran = (ep.toolCalls ?? 0) - (ep.failedToolCalls ?? 0);
    valid += Math.min(ran, ep.turns.length);
    tokens += ep.turns.reduce((a, t) => a + t.actionTokens.length, 0);
  }
  const n = o.episodes;
  return {
    envId,
    episodes: n,
    successRate: solved / n,
    validCallRate: turns ? valid / turns : 0,
    meanReward: reward / n,
    meanTurns: turns / n,
    tokensPerTurn: turns ? tokens / turns : 0,
    contextFullRate: contextFull / n,
  };
}

/** A markdown table of tool evaluations (the model card's). */
export function toolEvaluationTable(results: readonly ToolEnvEvaluation[]): string {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  return [
    "| environment | episodes | success | valid calls | mean reward | mean turns | tokens per turn | context full |",
    "|---|---|---|---|---|---|---|---|",
    ...results.map((r) =>
      `| ${r.envId} | ${r.episodes} | ${pct(r.successRate)} | ${pct(r.validCallRate)} | ` +
      `${r.meanReward.toFixed(3)} | ${r.meanTurns.toFixed(1)} | ${r.tokensPerTurn.toFixed(1)} | ` +
      `${pct(r.contextFullRate)} |`
    ),
  ].join("\n");
}
