import { assert } from "../assert.ts";
import { stepLoopMeasures } from "../../bench/pipeline.ts";

/** Three steps of a sync-like run: rollout 400 ms, score 10, train 600, a 20 ms gap. */
function syncSpans() {
  const spans = [];
  let t = 1000;
  for (let step = 1; step <= 3; step++) {
    spans.push({ step, name: "rollout", start: t, end: t + 400 });
    spans.push({ step, name: "score", start: t + 400, end: t + 410 });
    spans.push({ step, name: "train", start: t + 410, end: t + 1010 });
    spans.push({ step, name: "forward_backward", start: t + 410, end: t + 900 });
    spans.push({ step, name: "step", start: t, end: t + 1010 });
    t += 1030;
  }
  return spans;
}

Deno.test("pipeline bench: the step loop leaves out step 1 and counts train spans as busy", () => {
  const m = stepLoopMeasures(syncSpans(), 32);
  // Steps 2 and 3: from step 1's end (2010) to step 3's end (4070).
  assert.equal(m.loop_wall_s, 2.06);
  assert.equal(m.loop_episodes_per_s, 64 / 2.06);
  assert.equal(m.loop_service_busy_frac, 1200 / 2060);
  assert.equal(m.rollout_ms, 400);
  assert.equal(m.train_ms, 600);
  assert.equal(m.gap_ms, 20);
  assert.equal(m.minibatches, 1);
  assert.equal(m.forward_backward_calls, 1);
  assert.equal(m.group_arrival_spread_ms, 0);
});

Deno.test("pipeline bench: async groups' rollouts merge per step; stream arrivals spread", () => {
  const spans = [
    { step: 1, name: "step", start: 0, end: 100 },
    { step: 2, name: "rollout g0", start: 50, end: 150 },
    { step: 2, name: "rollout g1", start: 60, end: 170 },
    { step: 2, name: "score", start: 110, end: 112 },
    { step: 2, name: "score", start: 140, end: 141 },
    { step: 2, name: "score", start: 141, end: 142 },
    { step: 2, name: "forward_backward", start: 112, end: 160 },
    { step: 2, name: "forward_backward", start: 160, end: 250 },
    { step: 2, name: "train", start: 112, end: 300 },
    { step: 2, name: "step", start: 110, end: 300 },
  ];
  const m = stepLoopMeasures(spans, 2);
  assert.equal(m.rollout_ms, 120);
  assert.equal(m.minibatches, 3, "three minibatches");
  assert.equal(m.forward_backward_calls, 2, "in two calls");
  assert.equal(m.group_arrival_spread_ms, 31);
  assert.equal(m.gap_ms, 10);
  assert.equal(m.loop_service_busy_frac, 188 / 200);
  assert.throws(() => stepLoopMeasures(spans.filter((s) => s.step === 1), 2), /2 steps or more/);
});
