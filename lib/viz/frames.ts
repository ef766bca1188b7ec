/**
 * Polars frames of rollouts, datums and metrics: the tables a notebook shows and filters
 * (one row per episode, per turn, per target token, per logged step). Columns use the RL
 * field's words (`total_reward`, `advantage`, `sampler_logprob`) so a frame reads like the
 * trainer's logs.
 *
 * Integer columns never hold nulls (nodejs-polars 0.25 turns a null in an Int32 series into
 * 0); a number that may be missing lives in a Float64 column.
 *
 * @module
 */

import pl from "nodejs-polars";
import type { Episode, Turn } from "../rollout/mod.ts";
import type { Datum } from "../protocol/mod.ts";
import { ModelInput } from "../tinker/types.ts";
import { mean } from "../util/stats.ts";
import { actionText, nextStateText, observationText } from "../rl/text.ts";

/** A Polars data frame (nodejs-polars). */
export type DataFrame = pl.DataFrame;

/** Text back from token ids, e.g. a ByteTokenizer or the ChatML renderer's tokenizer. */
export interface Decoder {
  decode(ids: ArrayLike<number>): string;
}

/** Episodes, either one flat list (one group) or GRPO groups. */
export type EpisodeBatch = Episode[] | Episode[][];

/**
 * One row per episode: who played (`env_id`), where it sits (`group`, `episode`), how it went
 * (`total_reward`, the sum of its turns' rewards; `shaped_reward`, what its group compared when
 * its environment's rules shaped one, a mix's, else null; `n_turns`, `stop_reason`), its size in tokens and its mean sampler
 * log-prob, the quantities a GRPO batch is judged by.
 */
export function episodesToFrame(episodes: EpisodeBatch): DataFrame {
  const rows = indexed(episodes).map(({ group, episode, e }) => {
    const tokens = turnTokenCounts(e.turns);
    const lps = e.turns.flatMap((t) => t.logprobs);
    return {
      env_id: e.envId,
      group,
      episode,
      total_reward: e.totalReward,
      shaped_reward: e.shapedReward ?? null,
      n_turns: e.turns.length,
      stop_reason: e.stopReason,
      action_tokens: tokens.reduce((a, t) => a + t.action, 0),
      observation_tokens: tokens.reduce((a, t) => a + t.observation, 0),
      mean_logprob: lps.length ? mean(lps) : null,
      error: e.error ?? null,
    };
  });
  return frameWithColumns(EPISODE_COLUMNS, rows, ENTRY_TYPES);
}

const EPISODE_COLUMNS = [
  "env_id",
  "group",
  "episode",
  "total_reward",
  "shaped_reward",
  "n_turns",
  "stop_reason",
  "action_tokens",
  "observation_tokens",
  "mean_logprob",
  "error",
];

const ENTRY_TYPES: Record<string, ColumnType> = {
  env_id: "str",
  group: "int",
  episode: "int",
  turn: "int",
  total_reward: "float",
  shaped_reward: "float",
  reward: "float",
  n_turns: "int",
  stop_reason: "str",
  action_tokens: "int",
  observation_tokens: "int",
  mean_logprob: "float",
  error: "str",
  observation: "str",
  action_text: "str",
  action_decoded: "str",
  next_observation: "str",
};

/**
 * One row per turn: the observation it answered, the action text given to the env, the
 * reward, token counts and mean log-prob. With a tokenizer, `action_decoded` also shows the
 * sampled tokens exactly as sampled (end-of-message token included), which is what training
 * sees.
 */
export function turnsToFrame(episodes: EpisodeBatch, tokenizer?: Decoder): DataFrame {
  const rows = indexed(episodes).flatMap(({ group, episode, e }) => {
    const tokens = turnTokenCounts(e.turns);
    return e.turns.map((t, turn) => ({
      group,
      episode,
      turn,
      env_id: e.envId,
      observation: observationText(t),
      action_text: actionText(t),
      ...(tokenizer ? { action_decoded: tokenizer.decode(t.actionTokens) } : {}),
      reward: t.reward,
      action_tokens: tokens[turn].action,
      observation_tokens: tokens[turn].observation,
      mean_logprob: t.logprobs.length ? mean(t.logprobs) : null,
      next_observation: nextStateText(t),
    }));
  });
  const columns = [
    "group",
    "episode",
    "turn",
    "env_id",
    "observation",
    "action_text",
    ...(tokenizer ? ["action_decoded"] : []),
    "reward",
    "action_tokens",
    "observation_tokens",
    "mean_logprob",
    "next_observation",
  ];
  return frameWithColumns(columns, rows, ENTRY_TYPES);
}

/**
 * One row per target token of a datum: `position` (index among the targets), `token_id`,
 * `text`, `advantage`, `sampler_logprob`, and `is_action` (the token was sampled, i.e. it
 * carries a sampler log-prob or an advantage; prompt tokens carry 0 for both). With
 * `teacherLogprobs` (one per target, null where there is none), a `teacher_logprob` column
 * follows, so OPD's per-token `teacher − student` can be read next to the tokens.
 */
export function tokenAdvantagesFrame(
  datum: Datum,
  tokenizer: Decoder,
  { teacherLogprobs }: { teacherLogprobs?: (number | null)[] } = {},
): DataFrame {
  const n = ModelInput.length(datum.model_input);
  const targets = datum.loss_fn_inputs.target_tokens?.data;
  if (!targets) throw new Error("tokenAdvantagesFrame: the datum has no target_tokens");
  const get = (key: string) => {
    const t = datum.loss_fn_inputs[key];
    if (!t) throw new Error(`tokenAdvantagesFrame: the datum has no ${key} (an RL datum has it)`);
    return t.data;
  };
  const adv = get("advantages");
  const lps = get("logprobs");
  if (teacherLogprobs && teacherLogprobs.length !== n) {
    throw new Error(
      `tokenAdvantagesFrame: ${teacherLogprobs.length} teacher logprobs for ${n} target tokens`,
    );
  }
  const columns: pl.Series[] = [
    pl.Series("position", Array.from(targets, (_, i) => i), pl.Int32),
    pl.Series("token_id", Array.from(targets), pl.Int32),
    pl.Series("text", Array.from(targets, (id) => tokenizer.decode([id])), pl.Utf8),
    pl.Series("advantage", Array.from(adv), pl.Float64),
    pl.Series("sampler_logprob", Array.from(lps), pl.Float64),
    pl.Series("is_action", Array.from(targets, (_, i) => lps[i] !== 0 || adv[i] !== 0), pl.Bool),
  ];
  if (teacherLogprobs) columns.push(pl.Series("teacher_logprob", teacherLogprobs, pl.Float64));
  return pl.DataFrame(columns);
}

/** A value of a logged metrics row. */
export type MetricValue = number | string | boolean | null | undefined;

/**
 * One row per logged step. Columns are the union of every row's keys in first-seen order
 * (a metric logged only on some steps is null elsewhere); numbers become Float64 columns,
 * except `step`, which stays an integer when every row has one.
 */
export function metricsFrame(rows: Record<string, unknown>[]): DataFrame {
  const columns: string[] = [];
  const seen = new Set<string>();
  for (const r of rows) {
    for (const k of Object.keys(r)) if (!seen.has(k)) seen.add(k), columns.push(k);
  }
  const types: Record<string, ColumnType> = {};
  for (const c of columns) {
    const values = rows.map((r) => r[c]).filter((v) => v !== null && v !== undefined);
    if (values.every((v) => typeof v === "number")) {
      types[c] = c === "step" && values.length === rows.length &&
          values.every((v) => Number.isInteger(v))
        ? "int"
        : "float";
    } else if (values.every((v) => typeof v === "boolean")) types[c] = "bool";
    else types[c] = "str";
  }
  const normalised = rows.map((r) =>
    Object.fromEntries(columns.map((c) => {
      const v = r[c];
      if (v === undefined || v === null) return [c, null];
      if (types[c] === "str" && typeof v !== "string") return [c, JSON.stringify(v)];
      return [c, v];
    }))
  );
  return frameWithColumns(columns, normalised as Record<string, MetricValue>[], types);
}

type ColumnType = "int" | "float" | "str" | "bool";

function frameWithColumns(
  columns: string[],
  rows: Record<string, MetricValue>[],
  types: Record<string, ColumnType>,
): DataFrame {
  return pl.DataFrame(columns.map((c) => {
    const values = rows.map((r) => r[c] ?? null);
    switch (types[c] ?? "str") {
      case "int":
        return pl.Series(c, values as number[], pl.Int32);
      case "float":
        return pl.Series(c, values as (number | null)[], pl.Float64);
      case "bool":
        return pl.Series(c, values as (boolean | null)[], pl.Bool);
      case "str":
        return pl.Series(c, values as (string | null)[], pl.Utf8);
    }
  }));
}

/** Episodes with their group and index in the group (a flat list is group 0). */
function indexed(episodes: EpisodeBatch): { group: number; episode: number; e: Episode }[] {
  const groups = episodes.length > 0 && Array.isArray(episodes[0])
    ? episodes as Episode[][]
    : [episodes as Episode[]];
  return groups.flatMap((g, group) => g.map((e, episode) => ({ group, episode, e })));
}

/**
 * Tokens each turn adds: its sampled action, and the observation tokens that are new (a turn's
 * prompt normally extends the previous prompt and action; otherwise all of it is new).
 */
function turnTokenCounts(turns: Turn[]): { action: number; observation: number }[] {
  let prev: number[] = [];
  return turns.map((t) => {
    const extendsPrev = prev.length > 0 && t.observationTokens.length >= prev.length &&
      prev.every((x, i) => t.observationTokens[i] === x);
    const observation = t.observationTokens.length - (extendsPrev ? prev.length : 0);
    prev = [...t.observationTokens, ...t.actionTokens];
    return { action: t.actionTokens.length, observation };
  });
}
