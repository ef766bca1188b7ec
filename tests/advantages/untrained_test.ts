/**
 * Why a group or a step trained nothing (lib/advantages/untrained.ts), from records made as the
 * trainer writes them, each cause checked by its words.
 */

import { assert } from "../assert.ts";
import {
  type EpisodeOutcome,
  explainGroup,
  explainStep,
  groupUntrainedCauses,
} from "../../lib/advantages/untrained.ts";

type Turn = EpisodeOutcome["turns"][number];

function ep(group: string, reward: number, o: Partial<EpisodeOutcome> = {}, turn: Turn = {}) {
  const trained = o.turns === undefined && turn.score?.trained === undefined ? false : undefined;
  return {
    group_id: group,
    group_kept: true,
    total_reward: reward,
    success: reward >= 1,
    stop_reason: "completed",
    turns: [{
      next_state: [{ role: "user", content: "lower" }],
      evidence: { errors: [] },
      score: { rl_reward: reward, rl_advantage: 0, trained: trained ?? false },
      ...turn,
    }],
    ...o,
  } as EpisodeOutcome;
}

Deno.test("untrained: a group with a trained turn has no cause; neither has its step", () => {
  const trained = ep("g0", 1, {}, { score: { rl_reward: 1, rl_advantage: 0.5, trained: true } });
  assert.equal(explainGroup([trained, ep("g0", 0)]), null);
  assert.equal(explainStep([trained, ep("g0", 0), ep("g1", 1), ep("g1", 1)]), null);
});

Deno.test("untrained: constant rewards, all solved, parse errors", () => {
  assert.match(
    explainGroup([ep("g", 0), ep("g", 0)])!,
    /^constant rewards \(every episode 0\): a group baseline leaves no signal \(a larger --group-size/,
  );
  assert.match(explainGroup([ep("g", 1), ep("g", 1)])!, /^every episode solved its task/);
  const parse = { stop_reason: "parse_error" };
  assert.equal(
    explainGroup([ep("g", -0.1, parse), ep("g", -0.1, parse)]),
    "constant rewards (every episode -0.1): a group baseline leaves no signal (a larger " +
      "--group-size or rewards with partial credit give one); 2/2 episodes ended in a parse error",
  );
  assert.match(
    explainStep([ep("a", 0), ep("a", 0), ep("b", 0.5), ep("b", 0.5)])!,
    /^every group had one reward in all its episodes \(constant groups: no signal/,
  );
  assert.equal(
    explainStep([ep("a", 1), ep("a", 1)]),
    "every group solved its task in all episodes (constant reward)",
  );
});

Deno.test("untrained: excluded groups and failed episodes in the record's words", () => {
  const why = "failing: 0 of 8 episodes solved";
  const excluded = { group_kept: false, excluded_reason: why };
  assert.equal(explainGroup([ep("g", 0, excluded), ep("g", 1, excluded)]), `excluded: ${why}`);
  const failed = { turns: [], error: "env step failed: boom", excluded_reason: "episode failed" };
  assert.equal(
    explainGroup([ep("g", 0, failed)]),
    "every episode failed (1; first: env step failed: boom)",
  );
  assert.equal(
    explainStep([ep("g", 0, failed), ep("h", 0, failed)]),
    "every rollout failed (2; first: env step failed: boom)",
  );
  assert.equal(
    explainStep([ep("a", 0, excluded), ep("b", 0), ep("b", 0)]),
    `1 group excluded: ${why}; every group had one reward in all its episodes (constant groups: ` +
      "no signal; a larger --group-size or rewards with partial credit give one)",
  );
});

Deno.test("untrained: down-sampled episodes leave the baseline the kept ones'", () => {
  const ds = { excluded_reason: "down-sampled: not among …" };
  assert.match(
    explainGroup([ep("g", 1), ep("g", 1), ep("g", 0, ds)])!,
    /every episode solved its task \(reward 1 among the 2 episodes down-sampling kept\)/,
  );
});

Deno.test("untrained: no hint, no next state, masked tokens, failed scoring calls", () => {
  const noHint = { evidence: { hint: null, errors: [] } };
  const rewards = [0, 1];
  assert.deepEqual(
    groupUntrainedCauses(rewards.map((r) => ep("g", r, {}, noHint)))!.map((c) => c.kind),
    ["no_hint"],
  );
  const noNext = { next_state: [], evidence: { hint: null, errors: [] } };
  assert.equal(
    explainStep(rewards.map((r) => ep("g", r, {}, noNext))),
    "no hint: no turn has a next state to take a hint from (opd and combine need the reply " +
      "that followed an action)",
  );
  const masked = { score: { rl_reward: 1, rl_advantage: 0.5, trained: false } };
  assert.match(explainGroup([ep("g", 1, {}, masked), ep("g", 0)])!, /^every token masked/);
  const failedCall = { evidence: { hint: null, errors: ["teacher: context length exceeded"] } };
  assert.match(
    explainGroup([ep("g", 0, {}, failedCall), ep("g", 1, {}, failedCall)])!,
    /scoring failed on 2 turns \(teacher: context length exceeded\)/,
  );
});

Deno.test("untrained: the RL term's reward is read from score.rl_reward, or a version 2 record's score.reward", () => {
  // Success-only scoring: a near miss (0.89) and a miss (0) both scored 0, a constant group.
  const scored = (total: number, score: Turn["score"]) => ep("g", total, {}, { score });
  const v3 = [0.89, 0].map((r) => scored(r, { rl_reward: 0, rl_advantage: 0, trained: false }));
  const v2 = [0.89, 0].map((r) => scored(r, { reward: 0, rl_advantage: 0, trained: false }));
  for (const group of [v3, v2]) {
    assert.match(explainGroup(group)!, /^constant rewards \(every episode 0\)/);
  }
});
