/**
 * The rollout store's records: one JSON line per episode in `rollouts/iteration_NNNNNN.jsonl`,
 * written from the scored records as they are, with a schema and a version number so readers
 * (benchmarks, notebooks, the run API) can check what they read.
 *
 * Version 3 (this one): one name per reward. A turn's `reward` is its environment's;
 * `score.rl_reward` is what the RL term used (the env's, success-only or the PRM score, as
 * `scoring.rl_reward` chose); the episode's `total_reward` sums its turns' rewards, and
 * `shaped_reward`, when its environment's rules shaped one (a mix), is what its group compared.
 * Version 2: the same but `score.reward` for `score.rl_reward` and no `shaped_reward`; this
 * module still reads it ({@link parseRolloutRecord}). Version 2 brought messages instead of bare
 * texts, per-turn sampler version and stop reason, the turn's evidence and score, and later, as
 * optional fields older records lack: a turn's `tokens` (the sampled ids with their sampler
 * log-probs, per-token advantages and, for OPD, teacher log-probs), so the run viewer can colour
 * every sampled token; and `excluded_reason` on groups left out of training and on failed
 * episodes. Version 1: untagged, `observation`, `action` and `next_observation` as strings.
 *
 * @module
 */

import { z } from "zod";
import type { ScoredEpisode, ScoredGroup } from "./types.ts";

/** The version written by {@link rolloutRecords}. */
export const ROLLOUT_SCHEMA_VERSION = 3;

/** A chat message as the rollout store writes it. */
export const MessageRecordSchema: z.ZodObject<
  {
    role: z.ZodEnum<{ system: "system"; user: "user"; assistant: "assistant"; tool: "tool" }>;
    content: z.ZodString;
    thinking: z.ZodOptional<z.ZodString>;
    toolCalls: z.ZodOptional<
      z.ZodArray<
        z.ZodObject<
          { name: z.ZodString; arguments: z.ZodUnknown; id: z.ZodOptional<z.ZodString> },
          z.core.$strip
        >
      >
    >;
    toolCallId: z.ZodOptional<z.ZodString>;
  },
  z.core.$strip
> = z.object({
  role: z.enum(["system", "user", "assistant", "tool"]),
  content: z.string(),
  thinking: z.string().optional(),
  toolCalls: z.array(
    z.object({ name: z.string(), arguments: z.unknown(), id: z.string().optional() }),
  )
    .optional(),
  toolCallId: z.string().optional(),
});

/** One turn of a rollout record. */
export const TurnRecordSchema: z.ZodObject<
  {
    observation: z.ZodArray<typeof MessageRecordSchema>;
    action: typeof MessageRecordSchema;
    next_state: z.ZodArray<typeof MessageRecordSchema>;
    reward: z.ZodNumber;
    ob_tokens: z.ZodNumber;
    ac_tokens: z.ZodNumber;
    mean_logprob: z.ZodNumber;
    stop_reason: z.ZodEnum<{ length: "length"; stop: "stop" }>;
    sampler_version: z.ZodNumber;
    evidence: z.ZodObject<
      {
        prm: z.ZodOptional<
          z.ZodObject<
            {
              score: z.ZodNumber;
              votes: z.ZodArray<z.ZodNullable<z.ZodNumber>>;
              representative: z.ZodNullable<z.ZodString>;
            },
            z.core.$strip
          >
        >;
        hint: z.ZodOptional<z.ZodNullable<z.ZodString>>;
        hint_decisions: z.ZodOptional<z.ZodArray<z.ZodNullable<z.ZodNumber>>>;
        errors: z.ZodArray<z.ZodString>;
      },
      z.core.$strip
    >;
    tokens: z.ZodOptional<
      z.ZodObject<
        {
          ids: z.ZodArray<z.ZodNumber>;
          logprobs: z.ZodArray<z.ZodNumber>;
          advantages: z.ZodNullable<z.ZodArray<z.ZodNumber>>;
          teacher_logprobs: z.ZodOptional<z.ZodArray<z.ZodNumber>>;
        },
        z.core.$strip
      >
    >;
    score: z.ZodObject<
      {
        rl_reward: z.ZodNumber;
        rl_advantage: z.ZodNumber;
        opd_mean: z.ZodOptional<z.ZodNumber>;
        dispatch: z.ZodNullable<z.ZodEnum<{ rl: "rl"; opd: "opd"; "opd+rl": "opd+rl" }>>;
        trained: z.ZodBoolean;
      },
      z.core.$strip
    >;
  },
  z.core.$strip
> = z.object({
  observation: z.array(MessageRecordSchema),
  action: MessageRecordSchema,
  next_state: z.array(MessageRecordSchema),
  reward: z.number(),
  ob_tokens: z.number().int(),
  ac_tokens: z.number().int(),
  mean_logprob: z.number(),
  stop_reason: z.enum(["stop", "length"]),
  sampler_version: z.number().int(),
  evidence: z.object({
    prm: z.object({
      score: z.number(),
      votes: z.array(z.number().nullable()),
      representative: z.string().nullable(),
    }).optional(),
    hint: z.string().nullable().optional(),
    hint_decisions: z.array(z.number().nullable()).optional(),
    errors: z.array(z.string()),
  }),
  tokens: z.object({
    ids: z.array(z.number().int()),
    logprobs: z.array(z.number()),
    advantages: z.array(z.number()).nullable(),
    teacher_logprobs: z.array(z.number()).optional(),
  }).optional(),
  score: z.object({
    rl_reward: z.number(),
    rl_advantage: z.number(),
    opd_mean: z.number().optional(),
    dispatch: z.enum(["opd+rl", "opd", "rl"]).nullable(),
    trained: z.boolean(),
  }),
});

/** `excluded_reason` of an episode that down-sampling left out of its kept group. */
export const DOWNSAMPLED_REASON =
  "down-sampled: not among its group's advantages.downsample_to episodes whose rewards vary most";

/** One episode of the rollout store. */
export const RolloutRecordSchema: z.ZodObject<
  {
    schema_version: z.ZodUnion<readonly [z.ZodLiteral<2>, z.ZodLiteral<3>]>;
    step: z.ZodNumber;
    group_id: z.ZodString;
    group_kept: z.ZodBoolean;
    excluded_reason: z.ZodOptional<z.ZodString>;
    env_id: z.ZodString;
    env_seed: z.ZodNullable<z.ZodNumber>;
    tags: z.ZodArray<z.ZodString>;
    episode: z.ZodNumber;
    total_reward: z.ZodNumber;
    shaped_reward: z.ZodOptional<z.ZodNumber>;
    success: z.ZodBoolean;
    stop_reason: z.ZodString;
    error: z.ZodOptional<z.ZodString>;
    turns: z.ZodArray<typeof TurnRecordSchema>;
  },
  z.core.$strip
> = z.object({
  /** The version the record was written as (a version 2 record is read into these fields). */
  schema_version: z.union([z.literal(2), z.literal(ROLLOUT_SCHEMA_VERSION)]),
  step: z.number().int(),
  group_id: z.string(),
  group_kept: z.boolean(),
  /** Why the group (or this failed episode) was left out of training. */
  excluded_reason: z.string().optional(),
  env_id: z.string(),
  env_seed: z.number().int().nullable(),
  tags: z.array(z.string()),
  episode: z.number().int(),
  /** The sum of its turns' rewards. */
  total_reward: z.number(),
  /** The episode's shaped reward, when its environment's rules gave one (a mix). */
  shaped_reward: z.number().optional(),
  success: z.boolean(),
  stop_reason: z.string(),
  error: z.string().optional(),
  turns: z.array(TurnRecordSchema),
});

/** One episode of the rollout store. */
export type RolloutRecord = z.infer<typeof RolloutRecordSchema>;

/**
 * The rollout store's records of a step's scored groups.
 *
 * @example
 * await log.writeRollouts(step, rolloutRecords(step, composed.groups, episodeSucceeded));
 */
export function rolloutRecords(
  step: number,
  groups: ScoredGroup[],
  succeeded: (e: ScoredEpisode["episode"]) => boolean,
): RolloutRecord[] {
  return groups.flatMap(({ group, episodes, kept }) =>
    episodes.map(({ episode: e, turns, downsampled }, i): RolloutRecord => ({
      schema_version: ROLLOUT_SCHEMA_VERSION,
      step,
      group_id: group.id,
      group_kept: kept,
      env_id: e.envId,
      env_seed: group.envSeed,
      tags: group.tags,
      episode: i,
      total_reward: e.totalReward,
      ...(e.shapedReward !== undefined ? { shaped_reward: e.shapedReward } : {}),
      success: succeeded(e),
      stop_reason: e.stopReason,
      ...(e.error ? { error: e.error } : {}),
      ...(kept ? {} : { excluded_reason: "dropped by the constant-group rule" }),
      ...(kept && downsampled ? { excluded_reason: DOWNSAMPLED_REASON } : {}),
      turns: turns.map(({ turn: t, evidence: ev, score: s, advantages }) => ({
        observation: t.observation,
        action: t.action,
        next_state: t.nextState,
        reward: t.reward,
        ob_tokens: t.observationTokens.length,
        ac_tokens: t.actionTokens.length,
        mean_logprob: t.logprobs.length
          ? t.logprobs.reduce((a, b) => a + b, 0) / t.logprobs.length
          : 0,
        stop_reason: t.stopReason,
        sampler_version: t.samplerVersion,
        evidence: {
          ...(ev.prm ? { prm: ev.prm } : {}),
          ...(ev.hint !== undefined ? { hint: ev.hint } : {}),
          ...(ev.hintDecisions ? { hint_decisions: ev.hintDecisions } : {}),
          errors: ev.errors,
        },
        tokens: {
          ids: t.actionTokens,
          logprobs: t.logprobs,
          advantages,
          ...(ev.teacherLogprobs ? { teacher_logprobs: ev.teacherLogprobs } : {}),
        },
        score: {
          rl_reward: s.rlReward,
          rl_advantage: s.rlAdvantage,
          ...(s.opdMean !== undefined ? { opd_mean: s.opdMean } : {}),
          dispatch: s.dispatch,
          trained: s.trained,
        },
      })),
    }))
  );
}

/**
 * Parses one line of the rollout store. A version 2 record reads into this version's fields (its
 * `score.reward` as `score.rl_reward`); a record of another version is an error naming it.
 *
 * @example
 * const { turns } = parseRolloutRecord(JSON.parse(line));
 * turns[0].score.rl_reward; // the RL term's reward, from a version 2 or 3 record
 */
export function parseRolloutRecord(row: unknown): RolloutRecord {
  const v = (row as { schema_version?: unknown })?.schema_version;
  if (v === 2) return RolloutRecordSchema.parse(fromVersion2(row as Record<string, unknown>));
  if (v !== ROLLOUT_SCHEMA_VERSION) {
    throw new Error(
      `rollout record of schema version ${
        v ?? 1
      }; this reader reads 2 and ${ROLLOUT_SCHEMA_VERSION}`,
    );
  }
  return RolloutRecordSchema.parse(row);
}

/** A version 2 record with its turns' `score.reward` renamed `score.rl_reward`. */
function fromVersion2(row: Record<string, unknown>): Record<string, unknown> {
  if (!Array.isArray(row.turns)) return row;
  const turns = row.turns.map((t: Record<string, unknown>) => {
    const score = t?.score as Record<string, unknown> | undefined;
    if (!score || typeof score !== "object" || !("reward" in score)) return t;
    const { reward, ...rest } = score;
    return { ...t, score: { rl_reward: reward, ...rest } };
  });
  return { ...row, turns };
}
