import { assert } from "../assert.ts";
import { mean, sampleStd, std } from "../../lib/util/stats.ts";

Deno.test("stats: sample std divides by n − 1 (Python's statistics.stdev), std by n", () => {
  const xs = [2, 4, 4, 4, 5, 5, 7, 9];
  assert.equal(mean(xs), 5);
  assert.equal(std(xs), 2);
  assert.ok(Math.abs(sampleStd(xs) - Math.sqrt(32 / 7)) < 1e-12);
  assert.equal(sampleStd([3]), 0);
  assert.equal(sampleStd([]), 0);
});
