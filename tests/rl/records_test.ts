/**
 * The rollout store's records (lib/rl/records.ts): version 3 names each reward once (a turn's
 * `reward`, the RL term's `score.rl_reward`, the episode's `total_reward` and `shaped_reward`),
 * and a version 2 line still reads, its `score.reward` as `score.rl_reward`.
 */

import { assert } from "../assert.ts";
import {
  parseRolloutRecord,
  ROLLOUT_SCHEMA_VERSION,
  rolloutRecords,
} from "../../lib/rl/records.ts";
import { isSolved } from "../../lib/rl/types.ts";
import { composeAdvantages } from "../../lib/scoring/compose.ts";
import { episode, group, RL_SETTINGS } from "./fixtures.ts";

Deno.test("records v3: a turn's reward, the RL term's rl_reward and the episode's shaped_reward each under one name", () => {
  const shaped = { ...episode("b", 0.89, "no"), shapedReward: 0.5 };
  const groups = [group("s000001-g000", [episode("a", 1, "yes"), shaped])];
  // Success-only: the RL term's reward (0 for a near miss) differs from the turn's (0.89).
  const out = composeAdvantages(groups, new Map(), { ...RL_SETTINGS, rewardSource: "success" });
  const lines = rolloutRecords(1, out.groups, (e) => isSolved(e.totalReward))
    .map((r) => JSON.parse(JSON.stringify(r)));
  assert.equal(ROLLOUT_SCHEMA_VERSION, 3);
  assert.deepEqual(
    lines.map((r) => [r.schema_version, r.total_reward, r.shaped_reward]),
    [[3, 1, undefined], [3, 0.89, 0.5]],
  );
  assert.deepEqual(lines.map((r) => [r.turns[0].reward, r.turns[0].score.rl_reward]), [
    [1, 1],
    [0.89, 0],
  ]);
  assert.equal("reward" in lines[1].turns[0].score, false);
  assert.deepEqual(lines.map(parseRolloutRecord), lines);
});

/** A version 2 line as runs before version 3 wrote it (one turn, `score.reward`). */
const V2_LINE = JSON.stringify({
  schema_version: 2,
  step: 4,
  group_id: "s000004-g001",
  group_kept: true,
  env_id: "GuessTheNumber-v0",
  env_seed: 11,
  tags: [],
  episode: 0,
  total_reward: 0.89,
  success: false,
  stop_reason: "completed",
  turns: [{
    observation: [{ role: "user", content: "Guess." }],
    action: { role: "assistant", content: "\\boxed{7}" },
    next_state: [{ role: "user", content: "Close." }],
    reward: 0.89,
    ob_tokens: 12,
    ac_tokens: 5,
    mean_logprob: -0.7,
    stop_reason: "stop",
    sampler_version: 3,
    evidence: { errors: [] },
    score: { reward: 0, rl_advantage: -0.5, dispatch: "rl", trained: true },
  }],
});

Deno.test("records v2: a line written before version 3 reads with its score.reward as rl_reward", () => {
  const r = parseRolloutRecord(JSON.parse(V2_LINE));
  assert.equal(r.schema_version, 2);
  assert.deepEqual(r.turns[0].score, {
    rl_reward: 0,
    rl_advantage: -0.5,
    dispatch: "rl",
    trained: true,
  });
  assert.deepEqual([r.turns[0].reward, r.total_reward, r.shaped_reward], [0.89, 0.89, undefined]);
});

Deno.test("records: a version 1 line (untagged) or a later version is an error naming it", () => {
  const row = JSON.parse(V2_LINE);
  assert.throws(
    () => parseRolloutRecord({ ...row, schema_version: undefined }),
    /schema version 1; this reader reads 2 and 3/,
  );
  assert.throws(() => parseRolloutRecord({ ...row, schema_version: 4 }), /version 4/);
});
