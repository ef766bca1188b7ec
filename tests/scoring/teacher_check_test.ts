import { assert } from "../assert.ts";
import { composeAdvantages } from "../../lib/scoring/compose.ts";
import type { EvidenceByTurn } from "../../lib/scoring/evidence.ts";
import {
  type TeacherGap,
  teacherGap,
  WorseTeacherCheck,
  worseTeacherVerdict,
} from "../../lib/scoring/teacher_check.ts";
import { TrainConfigSchema } from "../../lib/config/mod.ts";
import { RunFailedError, StepFailures } from "../../lib/trainer/failures.ts";
import { failureSettings } from "../../lib/trainer/prepare.ts";
import { group, RL_SETTINGS, turn } from "../rl/fixtures.ts";

const SETTINGS = { negativeFrac: 0.9, steps: 3 };

/** One opd-scored step: a turn whose student log-probs are `student`, the teacher's `teacher`. */
function composed(student: number[], teacher: number[], method: "opd" | "rl" = "opd") {
  const t = {
    ...turn("x", 0, "The number is lower."),
    actionTokens: student.map((_, i) => 100 + i),
    logprobs: student,
  };
  const evidence: EvidenceByTurn = new Map([[t, {
    hint: "The number is lower.",
    teacherLogprobs: teacher,
    errors: [],
  }]]);
  const g = group("g", [{ envId: "test", totalReward: 0, stopReason: "completed", turns: [t] }]);
  return composeAdvantages([g], evidence, { ...RL_SETTINGS, method });
}

const scoredStep = (student: number[], teacher: number[], method: "opd" | "rl" = "opd") =>
  composed(student, teacher, method).groups;

const gap = (negativeFrac: number): TeacherGap => ({ tokens: 500, negativeFrac, mean: -3.4 });
const steps = (...fracs: Array<number | null>) =>
  fracs.map((f, i) => ({ step: i + 1, gap: f === null ? null : gap(f) }));

Deno.test("teacher gap: teacher − student over the tokens that carried an OPD term", () => {
  // The worked example of the module doc: 4 of 5 tokens negative.
  const student = [-0.00002, -0.0005, -0.00005, -0.00003, -1.5];
  const teacher = [-6.2, -0.4, -11.2, -0.0001, -1.1];
  const g = teacherGap(scoredStep(student, teacher))!;
  assert.equal(g.tokens, 5);
  assert.equal(g.negativeFrac, 0.8);
  // Recorded with the step, so the rule's line is traceable to metrics.jsonl.
  const { metrics } = composed(student, teacher);
  assert.equal(metrics["score/opd_tokens"], 5);
  assert.equal(metrics["score/opd_negative_frac"], 0.8);
  const diffs = teacher.map((t, i) => t - student[i]);
  assert.ok(Math.abs(g.mean - diffs.reduce((a, b) => a + b) / 5) < 1e-12);
  // Without the teacher's log-probs (rl; a turn with no hint) there is nothing to judge.
  const rl = scoredStep(student, teacher, "rl");
  delete rl[0].episodes[0].turns[0].evidence.teacherLogprobs;
  assert.equal(teacherGap(rl), null);
  assert.equal(teacherGap([]), null);
});

Deno.test("worse teacher: 3 bad steps in a row stop the run; a good or unjudged step starts over", () => {
  assert.equal(worseTeacherVerdict(steps(0.95, 0.95), SETTINGS), null, "two are not enough");
  const line = worseTeacherVerdict(steps(0.95, 0.96, 0.93), SETTINGS)!;
  assert.match(
    line,
    /^steps 1-3: the teacher is worse than the student on its own samples \(teacher − student < 0 on 95% of 1500 tokens, mean -3\.40 nats\).*--method rl.*scoring\.worse_teacher_steps 0/,
  );
  assert.ok(!line.includes("\n"), "one line");
  assert.equal(worseTeacherVerdict(steps(0.95, 0.8, 0.95, 0.95), SETTINGS), null, "0.8 < 0.9");
  assert.equal(worseTeacherVerdict(steps(0.95, 0.95, null), SETTINGS), null, "no hints: unjudged");
  assert.equal(worseTeacherVerdict(steps(0.95, 0.95, 0.95), { ...SETTINGS, steps: 0 }), null);
  assert.match(worseTeacherVerdict(steps(0.99), { ...SETTINGS, steps: 1 })!, /^step 1: /);
  // Exactly at the threshold counts as bad; 99.6 % is shown as 99 %, never as 100 %.
  assert.match(worseTeacherVerdict(steps(0.9, 0.9, 0.9), SETTINGS)!, /on 90% of/);
  assert.match(worseTeacherVerdict(steps(0.996, 0.996, 0.996), SETTINGS)!, /on 99% of/);
});

Deno.test("worse teacher, fed step by step: the check and the run's failure rules", () => {
  const check = new WorseTeacherCheck(SETTINGS);
  assert.equal(check.observe(1, gap(0.95)), null);
  assert.equal(check.observe(2, gap(0.5)), null);
  assert.equal(check.observe(3, gap(0.95)), null);
  assert.equal(check.observe(4, gap(0.95)), null);
  assert.match(check.observe(5, gap(0.95))!, /^steps 3-5: /);

  // StepFailures (lib/trainer/failures.ts) calls the rule with each step's scored groups.
  const cfg = TrainConfigSchema.parse({ scoring: { method: "opd" } });
  const failures = new StepFailures(failureSettings(cfg));
  const bad = scoredStep([-0.1, -0.2, -0.3], [-2, -3, -4]);
  const taken: Parameters<StepFailures["check"]>[1] = {
    groups: [bad[0].group],
    metrics: {},
    spans: [],
  };
  failures.check(1, taken, null, bad);
  failures.check(2, taken, null, bad);
  assert.throws(
    () => failures.check(3, taken, null, bad),
    (e) => e instanceof RunFailedError && /^steps 1-3: the teacher is worse/.test(e.message),
  );
  const good = scoredStep([-0.1, -0.2, -0.3], [-0.05, -0.3, -0.1]);
  const patient = new StepFailures(failureSettings(cfg));
  for (let step = 1; step <= 5; step++) patient.check(step, taken, null, good);
});
