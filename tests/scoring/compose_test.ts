import { assert, assertClose } from "../assert.ts";
import {
  composeAdvantages,
  evidencePlan,
  type MethodSettings,
  successReward,
} from "../../lib/scoring/compose.ts";
import type { EvidenceByTurn } from "../../lib/scoring/evidence.ts";
import type { Episode, Turn, TurnEvidence } from "../../lib/rl/types.ts";
import { scoredGroupsToDatums } from "../../lib/datums/mod.ts";
import { DOWNSAMPLED_REASON, rolloutRecords } from "../../lib/rl/records.ts";
import { group, RL_SETTINGS, turn } from "../rl/fixtures.ts";

const base: MethodSettings = RL_SETTINGS;

/** A one-turn episode whose single action token has log-prob `lp`. */
function oneToken(reward: number, lp = -1): Episode {
  const t = turn("x", reward, "next state text", [lp]);
  t.actionTokens = [42];
  return { envId: "test", totalReward: reward, stopReason: "completed", turns: [t] };
}

function evidenceOf(entries: [Turn, Partial<TurnEvidence>][]): EvidenceByTurn {
  return new Map(entries.map(([t, e]) => [t, { errors: [], ...e }]));
}

const advantages = (b: ReturnType<typeof composeAdvantages>) =>
  b.groups.flatMap((g) => g.episodes.map((e) => e.turns[0].advantages));

Deno.test("compose rl: group-centred advantages (1, 0 → ±0.5); a constant group is kept but untrained", () => {
  const mixed = group("a", [oneToken(1), oneToken(0)]);
  const constant = group("b", [oneToken(0), oneToken(0)]);
  const b = composeAdvantages([mixed, constant], new Map(), base);
  assert.deepEqual(advantages(b), [[0.5], [-0.5], null, null]);
  assert.deepEqual(b.groups.map((g) => g.kept), [true, true]);
  assert.equal(b.advantageStats?.fracMixed, 0.5);
  assert.equal(b.metrics["score/trained_turns"], 2);
  assert.equal(scoredGroupsToDatums(b.groups).length, 2, "untrained episodes cost no datum");
});

Deno.test("compose rl on success: partial credit counts 0, penalties stay (1, 0.89, −0.1 → 1, 0, −0.1)", () => {
  assert.deepEqual([1, 1.5, 0.999, 0.89, 0, -0.1].map(successReward), [1, 1, 0, 0, 0, -0.1]);
  const g = () => group("a", [oneToken(1), oneToken(0.89), oneToken(-0.1)]);
  const env = advantages(composeAdvantages([g()], new Map(), base));
  const success = advantages(
    composeAdvantages([g()], new Map(), { ...base, rewardSource: "success" }),
  );
  // env: mean 0.597, so the near miss (0.89) looks better than average; on success it is not.
  assertClose(env[1]!, [0.89 - (1 + 0.89 - 0.1) / 3], 1e-9);
  assert.ok(env[1]![0] > 0);
  assertClose(success[1]!, [0 - (1 + 0 - 0.1) / 3], 1e-9);
  assertClose(success[0]!, [1 - 0.3], 1e-9);
});

Deno.test("compose opd: w_opd · (teacher − student) per token; no hint or no teacher: untrained", () => {
  const [a, b, c] = [oneToken(0, -2), oneToken(0, -1), oneToken(0, -1)];
  const ev = evidenceOf([
    [a.turns[0], { hint: "higher", teacherLogprobs: [-0.5] }],
    [b.turns[0], { hint: null }],
    [c.turns[0], { hint: "higher", errors: ["the teacher: down"] }],
  ]);
  const out = composeAdvantages([group("g", [a, b, c])], ev, { ...base, method: "opd", wOpd: 2 });
  // 2 · (−0.5 − (−2)) = 3
  assert.deepEqual(advantages(out), [[3], null, null]);
  assert.deepEqual(out.groups[0].episodes.map((e) => e.turns[0].score.dispatch), [
    "opd",
    null,
    null,
  ]);
  assert.equal(out.metrics["score/errors"], 1);
  assert.equal(out.metrics["score/hint_accepted_frac"], 2 / 3);
});

Deno.test("compose combine: OpenClaw's dispatch and w_opd·opd + w_rl·A_rl per token", () => {
  // Group g1's rewards 1, 1, 0, 0 centre to A_rl = 0.5, 0.5, −0.5, −0.5; group g2 is constant,
  // so A_rl = 0 there: a hint alone trains OPD only, and neither trains nothing.
  const hintRl = oneToken(1, -2), rlOnly = oneToken(1, -1), hintRlNeg = oneToken(0, -1);
  const g1 = group("g1", [hintRl, rlOnly, hintRlNeg, oneToken(0)]);
  const hintZero = oneToken(0.5, -3), zero = oneToken(0.5, -1);
  const g2 = group("g2", [hintZero, zero]);
  const ev = evidenceOf([
    [hintRl.turns[0], { hint: "h", teacherLogprobs: [-1] }],
    [rlOnly.turns[0], { hint: null }],
    [hintRlNeg.turns[0], { hint: "h", teacherLogprobs: [-0.5] }],
    [hintZero.turns[0], { hint: "h", teacherLogprobs: [-1] }],
    [zero.turns[0], { hint: null }],
  ]);
  const out = composeAdvantages([g1, g2], ev, { ...base, method: "combine", wOpd: 2, wRl: 0.5 });
  const dispatch = out.groups.flatMap((g) => g.episodes.map((e) => e.turns[0].score.dispatch));
  assert.deepEqual(dispatch, ["opd+rl", "rl", "opd+rl", "rl", "opd", null]);
  assertClose(advantages(out)[0]!, [2 * (-1 + 2) + 0.5 * 0.5], 1e-12, "hint and RL: 2.25");
  assertClose(advantages(out)[1]!, [0.5 * 0.5], 1e-12, "RL only: 0.25");
  assertClose(advantages(out)[2]!, [2 * (-0.5 + 1) + 0.5 * -0.5], 1e-12, "0.75");
  assertClose(advantages(out)[4]!, [2 * (-1 + 3)], 1e-12, "hint only: OPD term 4");
  assert.equal(advantages(out)[5], null, "neither: not trained");
  assert.equal(out.metrics["score/opd+rl_samples"], 2);
  assert.equal(out.metrics["score/opd_samples"], 1);
});

Deno.test("compose rl with PRM rewards: the at-least-one rule keeps one 0-scored turn per episode", () => {
  // One episode of three turns, PRM scores 0, 0, +1; a second episode of one turn scored −1.
  const t0 = turn("a", 0, "meh"), t1 = turn("b", 0, "meh"), t2 = turn("c", 0, "thanks");
  const ep: Episode = {
    envId: "test",
    totalReward: 0,
    stopReason: "completed",
    turns: [t0, t1, t2],
  };
  const other = oneToken(0);
  const prm = (score: 1 | 0 | -1) => ({ prm: { score, votes: [score], representative: "" } });
  const ev = evidenceOf([[t0, prm(0)], [t1, prm(0)], [t2, prm(1)], [other.turns[0], prm(-1)]]);
  const out = composeAdvantages([group("g", [ep, other])], ev, {
    ...base,
    rewardSource: "prm",
    advantages: { mode: "raw", rewardReduction: "sum" },
  });
  const trained = out.groups[0].episodes.map((e) => e.turns.map((t) => t.score.trained));
  // raw mode: each turn's advantage is its episode's reward (1 and −1). Turn 0 (score 0) is
  // promoted because nothing was kept before it; turn 1 (score 0) is masked; turn 2 is kept.
  assert.deepEqual(trained, [[true, false, true], [true]]);
  assert.deepEqual(out.groups[0].episodes[0].turns.map((t) => t.score.rlReward), [0, 0, 1]);
  assert.deepEqual(out.groups[0].episodes[1].turns[0].advantages, [-1]);
});

Deno.test("compose KL: −coef · (student − reference) added per token; no reference: untrained", () => {
  const a = oneToken(1, -1), b = oneToken(0, -1);
  const ev = evidenceOf([[a.turns[0], { referenceLogprobs: [-1.5] }], [b.turns[0], {}]]);
  const out = composeAdvantages([group("g", [a, b])], ev, { ...base, klCoef: 0.1 });
  // 0.5 − 0.1 · (−1 − (−1.5)) = 0.45
  assertClose(advantages(out)[0]!, [0.45], 1e-12, "KL-adjusted advantage");
  assert.equal(advantages(out)[1], null);
});

Deno.test("evidencePlan: what each method asks the network for", () => {
  assert.deepEqual(evidencePlan(base), {
    prm: false,
    hint: null,
    teacher: false,
    reference: false,
  });
  assert.deepEqual(evidencePlan({ ...base, method: "combine", hintSource: "judge", klCoef: 0.1 }), {
    prm: false,
    hint: "judge",
    teacher: true,
    reference: true,
  });
  assert.deepEqual(evidencePlan({ ...base, method: "opd", evalMode: true }), {
    prm: true,
    hint: "next_state",
    teacher: true,
    reference: false,
  });
});

Deno.test("compose with down-sampling: left-out episodes are untrained, even by OPD, and recorded why", () => {
  const eps = [oneToken(1), oneToken(1), oneToken(0), oneToken(1)];
  const ev = evidenceOf(eps.map((e) => [e.turns[0], { hint: "h", teacherLogprobs: [-0.5] }]));
  for (const method of ["rl", "combine"] as const) {
    const b = composeAdvantages([group("a", eps)], ev, {
      ...base,
      method,
      advantages: { downsampleTo: 2 },
    });
    // The failure and the first success: ±0.5; the other two are left out whole.
    assert.deepEqual(b.groups[0].episodes.map((e) => e.downsampled ?? false), [
      false,
      true,
      false,
      true,
    ]);
    assert.deepEqual(b.groups[0].episodes.map((e) => e.turns[0].score.trained), [
      true,
      false,
      true,
      false,
    ]);
    assert.equal(b.advantageStats?.downsampledEpisodes, 2);
    assert.equal(scoredGroupsToDatums(b.groups).length, 2);
    const records = rolloutRecords(1, b.groups, (e) => e.totalReward >= 1);
    assert.deepEqual(records.map((r) => r.excluded_reason ?? null), [
      null,
      DOWNSAMPLED_REASON,
      null,
      DOWNSAMPLED_REASON,
    ]);
    assert.ok(records.every((r) => r.group_kept));
  }
});
