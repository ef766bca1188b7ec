import { assert, assertClose } from "../assert.ts";
import {
  computeAdvantages,
  discountedReturns,
  maxVarianceSubset,
} from "../../lib/advantages/mod.ts";

const ep = (...turnRewards: number[]) => ({ turnRewards });
const flat = (a: number[][][]) => a.flat(2);

Deno.test("advantages: raw broadcasts the episode reward over its turns", () => {
  const r = computeAdvantages([[ep(0, 1), ep(0.5)]], { mode: "raw" });
  assert.deepEqual(r.advantages, [[[1, 1], [0.5]]]);
});

Deno.test("advantages: group_centered subtracts the group mean (Dr. GRPO, no std)", () => {
  const r = computeAdvantages([[ep(1), ep(0), ep(0), ep(1)], [ep(3), ep(1)]]);
  assert.deepEqual(r.advantages, [[[0.5], [-0.5], [-0.5], [0.5]], [[1], [-1]]]);
});

Deno.test("advantages: group_zscore and batch_zscore divide by the population std", () => {
  const groups = [[ep(1), ep(0)], [ep(4), ep(0)]];
  assertClose(
    flat(computeAdvantages(groups, { mode: "group_zscore" }).advantages),
    [1, -1, 1, -1],
    1e-6,
  );
  // batch: mean 1.25, std sqrt(((−.25)²+(−1.25)²+2.75²+(−1.25)²)/4) = sqrt(2.6875)
  const s = Math.sqrt(2.6875);
  assertClose(
    flat(computeAdvantages(groups, { mode: "batch_zscore" }).advantages),
    [-0.25 / s, -1.25 / s, 2.75 / s, -1.25 / s],
    1e-6,
  );
});

Deno.test("advantages: discounted returns and ReBN over every turn of the batch", () => {
  assert.deepEqual(discountedReturns([0, 0, 1], 0.5), [0.25, 0.5, 1]);
  const groups = [[ep(0, 0, 1), ep(-1)]];
  assert.deepEqual(computeAdvantages(groups, { mode: "discounted", gamma: 0.5 }).advantages, [[[
    0.25,
    0.5,
    1,
  ], [-1]]]);
  const rebn = flat(computeAdvantages(groups, { mode: "discounted_rebn", gamma: 0.5 }).advantages);
  const xs = [0.25, 0.5, 1, -1], mean = 0.1875;
  const std = Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / 4);
  assertClose(rebn, xs.map((x) => (x - mean) / std), 1e-6);
});

Deno.test("advantages: group_discounted compares each turn's return with the group's at that turn", () => {
  // Both solve; the faster one is ahead at every turn it has, the slower one's extra turns are
  // compared with nothing but themselves; a failure is behind wherever it is.
  const groups = [[ep(0, 1), ep(0, 0, 0, 1), ep(0, 0)]];
  const adv = computeAdvantages(groups, { mode: "group_discounted", gamma: 0.5 }).advantages;
  // Returns: [0.5, 1], [0.125, 0.25, 0.5, 1], [0, 0]; turn baselines 0.208.., 0.4166.., 0.5, 1.
  assertClose(flat(adv), [
    0.5 - 0.625 / 3,
    1 - 1.25 / 3,
    0.125 - 0.625 / 3,
    0.25 - 1.25 / 3,
    0,
    0,
    -0.625 / 3,
    -1.25 / 3,
  ], 1e-12);
  // An all-solved group of equal lengths teaches nothing, as in group_centered.
  const same = computeAdvantages([[ep(0, 1), ep(0, 1)]], { mode: "group_discounted" });
  assert.deepEqual(flat(same.advantages), [0, 0, 0, 0]);
});

Deno.test("advantages: constant groups kept, dropped, or dropped but one kept", () => {
  const groups = [[ep(1), ep(1)], [ep(1), ep(0)], [ep(0), ep(0)]];
  assert.deepEqual(computeAdvantages(groups).keptGroups, [0, 1, 2]);
  const dropped = computeAdvantages(groups, { constantGroups: "drop" });
  assert.deepEqual(dropped.keptGroups, [1]);
  assert.equal(dropped.stats.droppedGroups, 2);
  const allConstant = [[ep(1), ep(1)], [ep(0), ep(0)]];
  assert.deepEqual(computeAdvantages(allConstant, { constantGroups: "drop" }).keptGroups, []);
  assert.deepEqual(computeAdvantages(allConstant, { constantGroups: "drop_keep_one" }).keptGroups, [
    0,
  ]);
});

Deno.test("advantages: reward reduction, non-terminal reward and clamps", () => {
  const groups = [[ep(1, 2, 3), ep(0)]];
  assert.deepEqual(
    flat(computeAdvantages(groups, { mode: "raw", rewardReduction: "mean" }).advantages),
    [2, 2, 2, 0],
  );
  assert.deepEqual(
    flat(computeAdvantages(groups, { mode: "raw", rewardReduction: "max" }).advantages),
    [3, 3, 3, 0],
  );
  assert.deepEqual(
    flat(computeAdvantages(groups, { mode: "raw", nonFinalTurnReward: 0 }).advantages),
    [3, 3, 3, 0],
  );
  assert.deepEqual(
    flat(computeAdvantages(groups, { mode: "raw", clampMin: 0.5, clampMax: 2.5 }).advantages),
    [2.5, 2.5, 2.5, 0.5],
  );
});

Deno.test("advantages: group outcome shares and advantage stats", () => {
  const r = computeAdvantages([[ep(1), ep(1)], [ep(1), ep(0)], [ep(0), ep(0)], [ep(-1), ep(-1)]]);
  assert.equal(r.stats.fracMixed, 0.25);
  assert.equal(r.stats.fracAllGood, 0.25);
  assert.equal(r.stats.fracAllBad, 0.5);
  assert.deepEqual([r.stats.min, r.stats.max], [-0.5, 0.5]);
});

Deno.test("advantages: bad input is a clear error", () => {
  assert.throws(() => computeAdvantages([[ep()]]), /at least one turn/);
  assert.throws(() => computeAdvantages([[ep(NaN)]]), /non-finite/);
  assert.throws(() => computeAdvantages([[ep(1)]], { mode: "nope" as never }));
  assert.throws(() => computeAdvantages([[ep(1)]], { clampMin: 2, clampMax: 1 }), /clampMin/);
});

Deno.test("down-sampling: the max-variance subset is some highest rewards with the lowest (PODS)", () => {
  // The module's worked examples.
  assert.deepEqual(maxVarianceSubset([1, 1, 0, 1, 1, 1], 4), [0, 1, 2, 3]);
  assert.deepEqual(maxVarianceSubset([1, 0, 1, 0, 1, 0, 1, 1], 4), [0, 1, 2, 3]);
  assert.deepEqual(maxVarianceSubset([0.2, 0.9, 0.5, 0.1], 2), [1, 3]);
  assert.deepEqual(maxVarianceSubset([1, 0], 4), [0, 1], "m ≥ the group: every episode");
  // Against brute force over every subset of 3 of 7 rewards.
  const rs = [0.3, 1, 0, 0.7, 0.7, 0.1, 1];
  const variance = (ix: number[]) => {
    const m = ix.reduce((a, i) => a + rs[i], 0) / ix.length;
    return ix.reduce((a, i) => a + (rs[i] - m) ** 2, 0) / ix.length;
  };
  let best = 0;
  for (let a = 0; a < 7; a++) {
    for (let b = a + 1; b < 7; b++) {
      for (let c = b + 1; c < 7; c++) best = Math.max(best, variance([a, b, c]));
    }
  }
  assertClose([variance(maxVarianceSubset(rs, 3))], [best], 1e-12);
  assert.throws(() => maxVarianceSubset(rs, 0), Error, "down-sample size must be ≥ 1");
});

Deno.test("down-sampling: the mode sees the subset only; the others get 0 and are counted", () => {
  // 6 episodes, one failure: keep it and three successes; their mean is 0.75.
  const r = computeAdvantages([[ep(1), ep(1), ep(1), ep(0), ep(1), ep(1)], [ep(1), ep(0)]], {
    downsampleTo: 4,
  });
  assert.deepEqual(r.advantages, [
    [[0.25], [0.25], [0.25], [-0.75], [0], [0]],
    [[0.5], [-0.5]],
  ]);
  assert.deepEqual(r.downsampled, [[false, false, false, false, true, true], [false, false]]);
  assert.equal(r.stats.downsampledEpisodes, 2);
  assertClose([r.stats.mean], [0], 1e-12, "stats over the trained episodes");
  // Multi-turn episodes keep their turn count; the discounted modes see the subset too.
  const d = computeAdvantages([[ep(0, 1), ep(0, 0, 0), ep(1)]], {
    mode: "group_discounted",
    gamma: 1,
    downsampleTo: 2,
  });
  // Episode rewards 1, 0, 1: the first and the failure; per-turn baselines over those two.
  assert.deepEqual(d.downsampled, [[false, false, true]]);
  assert.deepEqual(d.advantages, [[[0.5, 0.5], [-0.5, -0.5, 0], [0]]]);
});
