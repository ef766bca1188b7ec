/**
 * The nouns of RL in tinkerbench, in the spirit of tinker-cookbook's `rl/types.py`: a turn, an
 * episode, a group of episodes from one start state, and the same records once scored. They are
 * made once (by a rollout over an environment, by the proxy from an agent's session, by an
 * OpenReward rollout) and travel unchanged through evidence gathering, composition of
 * advantages, datums, metrics and the rollout store: later stages attach to them, never copy or
 * re-key them.
 *
 * ```text
 * EpisodeGroup ─ episodes ─> Episode ─ turns ─> Turn            (rollout, proxy)
 *      │ gatherEvidence: judge votes, hints, teacher/reference log-probs per Turn
 *      ▼ composeAdvantages (pure, per method)
 * ScoredGroup ─ episodes ─> ScoredEpisode ─ turns ─> ScoredTurn (turn + evidence + score + advantages)
 *      │ scoredEpisodeDatums → forward_backward
 *      ▼ rollout store (RolloutRecord, schema-versioned)
 * ```
 *
 * @module
 */

import type { Message } from "../renderers/types.ts";

/** A value or a promise of it: environments may answer synchronously or over the network. */
export type Awaitable<T> = T | Promise<T>;

/** A PRM vote: +1 progress, −1 correction or error, 0 ambiguous. */
export type Vote = 1 | -1 | 0;

/** The training methods of OpenClaw: env/PRM rewards, on-policy distillation, or both. */
export type Method = "rl" | "opd" | "combine";

/** Why an episode ended. */
export type EpisodeStopReason =
  | "completed"
  | "max_turns"
  | "max_tokens"
  | "parse_error"
  | "error";

/** Why sampling of one action ended: its stop token, or the token limit. */
export type TurnStopReason = "stop" | "length";

/**
 * One turn: the prompt the policy saw, the action it sampled (tokens as sampled, never
 * re-tokenized), and what followed. Messages are kept beside tokens so judges and teachers can
 * read the conversation; tokens are what is trained.
 */
export interface Turn {
  /** The messages this turn added before the action (turn 0: the whole opening, system included). */
  observation: Message[];
  /** The full prompt of the action (for turn 2+, normally the previous sequence plus new tokens). */
  observationTokens: number[];
  /** The action, parsed by the policy's renderer (content, thinking, tool calls). */
  action: Message;
  /** The sampled action's tokens, exactly as sampled. */
  actionTokens: number[];
  /** Sampler log-probs of `actionTokens`, one per token. */
  logprobs: number[];
  /** The turn's reward from its environment (or the client, through the proxy). */
  reward: number;
  /**
   * The parts that make up `reward` when the environment gave them separately, one per tool
   * call that gave one (a tool may give none); absent means `[reward]`.
   */
  rewardParts?: number[];
  /**
   * The messages that followed the action: the env's reply or tool results, or the agent's next
   * user message (its next state, read by the PRM judge and the OPD hint); [] when nothing did.
   */
  nextState: Message[];
  /** Why sampling of the action ended. */
  stopReason: TurnStopReason;
  /** The version of the sampler that produced the action (the training step its weights are from). */
  samplerVersion: number;
}

/** A finished episode. */
export interface Episode {
  /** The environment the episode was played in. */
  envId: string;
  /** The turns, in order. */
  turns: Turn[];
  /** The sum of its turns' rewards (metrics, the success rule, the viewer). */
  totalReward: number;
  /**
   * The episode's reward when its environment's rules shaped it (a mix's reduction, unfinished
   * reward and clamps, lib/advantages/shaping.ts); the RL term then uses it instead of reducing
   * the turn rewards by the advantage settings. It travels with the episode, so any execution
   * mode can train it.
   */
  shapedReward?: number;
  /** Why the episode ended. */
  stopReason: EpisodeStopReason;
  /** The error that ended it (stop reason "error"). */
  error?: string;
  /** Set when the episode ended because it ran past its wall-clock limit (stop reason "error"). */
  timedOut?: boolean;
  /** Action tokens sampled over the episode. */
  sampledTokens?: number;
  /** Wall time of the episode. */
  durationMs?: number;
  /**
   * The sampler seed of the episode's turns (turn t samples with seed + t). In a group of two
   * episodes or more, the first turn of the first attempt is the episode's sample of the group's
   * one request instead (`lib/rollout/group_sample.ts`).
   */
  seed?: number;
  /** Attempts it took under a retry failure policy (1 = first try). */
  attempts?: number;
  /** Tool calls made (environments with tools only), malformed ones included. */
  toolCalls?: number;
  /** Tool calls that failed: malformed, unknown tool, invalid input. */
  failedToolCalls?: number;
  /** Malformed tool calls, answered by the rollout with a corrective message. */
  invalidToolCalls?: number;
}

/** Episodes from one start state: the unit GRPO centres rewards over. */
export interface EpisodeGroup {
  /** Stable within a run, e.g. `s000012-g03` (step 12, group 3); the proxy uses session ids. */
  id: string;
  /** The environment of the group's episodes. */
  envId: string;
  /** The seed the environment was reset with (null when there was none, e.g. a live session). */
  envSeed: number | null;
  /** Free labels for slicing metrics, e.g. the environment's name in a mix. */
  tags: string[];
  /** The episodes played from the start state. */
  episodes: Episode[];
}

/** The PRM judge's verdict on a turn: majority of `votes`, and one judge text that voted so. */
export interface PrmEvidence {
  /** The majority vote. */
  score: Vote;
  /** Each judge call's vote (null: its answer held no valid vote). */
  votes: (Vote | null)[];
  /** The text of one judge answer that voted as the majority did. */
  representative: string | null;
}

/**
 * What the network said about a turn: everything a method's composition needs that costs a
 * call. A call that failed leaves its field unset and its message in `errors`.
 */
export interface TurnEvidence {
  /** The PRM judge's verdict on the turn. */
  prm?: PrmEvidence;
  /** OPD's hindsight hint: the accepted text, or null when none was accepted. */
  hint?: string | null;
  /** The hint judge's decisions per vote (1 accept, -1 reject, null invalid). */
  hintDecisions?: (1 | -1 | null)[];
  /** The teacher's log-probs of the action tokens with the hint in the prompt (OPD). */
  teacherLogprobs?: number[];
  /** The reference policy's log-probs of the action tokens on the turn's own prompt (KL). */
  referenceLogprobs?: number[];
  /**
   * OpenClaw's at-least-one decision (whether a PRM-scored turn trains), when it was made as the
   * turn completed, in its session's order (the proxy keeps one rule per session for the run);
   * composition then uses it instead of deciding within the batch.
   */
  atLeastOne?: boolean;
  /** Failed calls, e.g. `teacher: context length exceeded`. */
  errors: string[];
}

/** OpenClaw's combine dispatch of a turn: which terms it trains on. */
export type Dispatch = "opd+rl" | "opd" | "rl" | null;

/** What composition decided about a turn. */
export interface TurnScore {
  /**
   * The reward the RL term used: the env's, success-only or the PRM score (the
   * `scoring.rl_reward` setting chooses which).
   */
  rlReward: number;
  /** The turn's RL advantage (0 when unused). */
  rlAdvantage: number;
  /** Mean teacher − student log-prob over the action (OPD turns). */
  opdMean?: number;
  /** Which terms the turn trains on (OpenClaw's combine; null in other methods). */
  dispatch: Dispatch;
  /** False when the turn has nothing to train on (its advantages are then null). */
  trained: boolean;
}

/** A turn with its evidence, score and per-token advantages (null: not trained). */
export interface ScoredTurn {
  /** The turn as played. */
  turn: Turn;
  /** What the judges and the teacher said about it. */
  evidence: TurnEvidence;
  /** What composition decided. */
  score: TurnScore;
  /** One advantage per action token; null: the turn is not trained. */
  advantages: number[] | null;
}

/** An episode with its scored turns. */
export interface ScoredEpisode {
  /** The episode as played. */
  episode: Episode;
  /** Its turns, scored. */
  turns: ScoredTurn[];
  /** Left out of training by down-sampling (`advantages.downsample_to`); its group is kept. */
  downsampled?: boolean;
}

/** A group whose episodes are scored; `kept` is false when the advantage pipeline dropped it. */
export interface ScoredGroup {
  /** The group as played. */
  group: EpisodeGroup;
  /** Its episodes, scored. */
  episodes: ScoredEpisode[];
  /** False when the advantage pipeline dropped the group (e.g. all rewards equal). */
  kept: boolean;
}

/**
 * The success rule: a reward of 1 or more solves the task (GEM's games give 1 for a solve and
 * less for anything else). The one place the trainer's `success` metric and
 * `reward_source: success` agree on.
 */
export function isSolved(reward: number): boolean {
  return reward >= 1 - 1e-9;
}
