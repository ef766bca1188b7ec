/** The progress bar's line: time left after a resume, and a line that fits the terminal. */

import { assert } from "../assert.ts";
import { progressLine } from "../../lib/cli/progress.ts";

const state = { label: "train", step: 510, total: 1000, from: 500, secs: 100, stats: {} };

Deno.test("progress: after a resume, time left counts only the steps this process did", () => {
  // 10 steps in 100 s, 490 to go: about 4,900 s, not the 100/510 s a step from step 0 suggests.
  assert.match(progressLine(state), /100s elapsed, ~4900s left$/);
  assert.match(progressLine({ ...state, from: 0 }), /~96s left$/);
  assert.doesNotMatch(progressLine({ ...state, step: 500 }), /left/, "no rate before a step");
});

Deno.test("progress: a line fits the terminal's width, the stats cut first", () => {
  const stats = { reward: 0.5, success: 0.25, loss: 1.5, "a long stat name": "value".repeat(10) };
  const full = progressLine({ ...state, stats });
  assert.ok(full.length > 80);
  for (const columns of [80, 60, 40, 20]) {
    const line = progressLine({ ...state, stats }, columns);
    assert.ok(line.length <= columns, `${line.length} > ${columns}: ${line}`);
  }
  assert.match(progressLine({ ...state, stats }, 80), /^train 510\/1000 \[.*~4900s left {2}reward/);
  assert.match(progressLine({ ...state, stats }, 40), /~4900s left$/, "time left is kept");
  assert.match(
    progressLine({ ...state, stats }, 60),
    /^train 510\/1000 \[#+-+\] 100s/,
    "a narrower bar",
  );
  assert.match(progressLine({ ...state, stats }, 44), /^train 510\/1000 100s elapsed/, "no bar");
  assert.equal(progressLine({ ...state, stats }, 500), full);
});
