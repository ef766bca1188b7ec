/**
 * What-if re-scoring (lib/scoring/rescore.ts): the records the trainer writes, composed again,
 * give back what was trained under the run's settings, and what composition gives under others.
 */

import { assert, assertClose } from "../assert.ts";
import { composeAdvantages, type MethodSettings } from "../../lib/scoring/compose.ts";
import { type RecordedEpisode, whatIf } from "../../lib/scoring/rescore.ts";
import { isSolved, rolloutRecords } from "../../lib/rl/mod.ts";
import type { Episode, Turn, TurnEvidence } from "../../lib/rl/types.ts";
import { group, RL_SETTINGS, turn } from "../rl/fixtures.ts";
import { whatIfFrames } from "../../lib/viz/whatif.ts";

function episode(reward: number, lps = [-1, -2]): Episode {
  const t = turn("x", reward, "next state text", lps);
  t.actionTokens = lps.map((_, i) => 40 + i);
  return { envId: "test", totalReward: reward, stopReason: "completed", turns: [t] };
}

function played() {
  return [
    group("s000001-g000", [episode(1), episode(0), episode(0.5)]),
    group("s000001-g001", [episode(1), episode(1), episode(1)]),
  ];
}

/** A step's records as the trainer writes them, composed under `s`. */
function recorded(
  s: MethodSettings,
  evidence = new Map<Turn, TurnEvidence>(),
  groups = played(),
) {
  const out = composeAdvantages(groups, evidence, s);
  const records = rolloutRecords(1, out.groups, (e) => isSolved(e.totalReward));
  return { groups, records: records as RecordedEpisode[] };
}

Deno.test("what-if: under the run's own settings the records give back what was trained", () => {
  const { records } = recorded(RL_SETTINGS);
  const w = whatIf(records, "s000001-g000", RL_SETTINGS);
  assert.deepEqual(w.episodes.map((e) => e.after), w.episodes.map((e) => e.before));
  assertClose([w.weightBefore], [w.weightAfter], 1e-12);
  assertClose([w.weightBefore], [2 * (0.5 + 0.5 + 0)], 1e-12);
  assert.equal(w.untrained, null);
  assert.match(whatIf(records, "s000001-g001", RL_SETTINGS).untrainedBefore!, /solved/);
});

Deno.test("what-if: another advantage mode gives what composition gives for it", () => {
  const { records } = recorded(RL_SETTINGS);
  const z = { ...RL_SETTINGS, advantages: { ...RL_SETTINGS.advantages, mode: "group_zscore" } };
  const w = whatIf(records, "s000001-g000", z as MethodSettings);
  const expected = composeAdvantages(recorded(RL_SETTINGS).groups, new Map(), z as MethodSettings);
  const want = expected.groups[0].episodes.map((e) => e.turns.map((t) => t.advantages));
  assert.deepEqual(w.episodes.map((e) => e.after), want);
  assertClose([w.weightAfter / w.weightBefore], [1 / Math.sqrt(1 / 6)], 1e-6);
  // A clamp at 0.25: every token's |advantage| at most 0.25.
  const clamped = whatIf(records, "s000001-g000", {
    ...RL_SETTINGS,
    advantages: { ...RL_SETTINGS.advantages, clampMin: -0.25, clampMax: 0.25 },
  });
  assertClose([clamped.weightAfter], [2 * (0.25 + 0.25)], 1e-12);
  const { before, after } = whatIfFrames(w);
  assert.equal(before.height, 6);
  // An untrained turn's tokens are rows too, with advantage 0.
  const perToken = want.flatMap((turns) => turns.flatMap((t) => t ?? [0, 0]));
  assert.deepEqual(after.getColumn("advantage").toArray(), perToken);
});

Deno.test("what-if: opd weights from the stored teacher log-probs; a KL penalty is refused", () => {
  const opd: MethodSettings = { ...RL_SETTINGS, method: "opd" };
  const groups = played();
  const evidence = new Map<Turn, TurnEvidence>(
    groups.flatMap((g) =>
      g.episodes.map((
        e,
      ) => [e.turns[0], { hint: "higher", teacherLogprobs: [-0.5, -0.5], errors: [] }])
    ),
  );
  const { records } = recorded(opd, evidence, groups);
  assert.ok(records[0].turns[0].tokens?.teacher_logprobs, "the store keeps teacher log-probs");
  const w = whatIf(records, "s000001-g000", { ...opd, wOpd: 2 });
  assertClose([w.weightAfter], [2 * w.weightBefore], 1e-9);
  assert.throws(
    () => whatIf(records, "s000001-g000", { ...opd, klCoef: 0.1 }),
    /reference log-probs/,
  );
});

Deno.test("what-if: a mix group's shaped rewards are stored, so its what-if gives back what was trained", () => {
  // Shaped rewards that reverse the turn rewards' order: reducing the turn rewards would not.
  const shaped = [1, 0, 0.5].map((r, i) => ({ ...episode(r), shapedReward: [0, 1, 0.5][i] }));
  const { records } = recorded(RL_SETTINGS, new Map(), [group("s000001-g000", shaped)]);
  assert.deepEqual(records.map((r) => r.shaped_reward), [0, 1, 0.5]);
  const w = whatIf(records, "s000001-g000", RL_SETTINGS);
  assert.deepEqual(w.episodes.map((e) => e.rlBefore), [[-0.5], [0.5], [0]]);
  assert.deepEqual(w.episodes.map((e) => e.after), w.episodes.map((e) => e.before));
});
