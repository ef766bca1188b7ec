/**
 * The worse-teacher rule of `opd` and `combine`. On-policy distillation pushes each sampled token
 * by `teacher_lp − student_lp`: it only helps when the teacher (the model with the hindsight
 * hint) is better than the student on the student's own samples. When that difference is
 * negative on nearly every token, step after step, every sampled token is pushed down and the
 * policy collapses (GuessTheNumber-easy on local/games2: held out 0.72 → 0.53 in 10 steps,
 * 0.70 → 0.02 in 40). The rule stops such a run in one line instead.
 *
 * Why the share of negative tokens and not the mean: on the student's samples the mean of
 * `teacher − student` estimates −KL(student ‖ teacher), which is never positive, even for a
 * teacher that helps. A helpful teacher raises the tokens its hint makes right and leaves the
 * rest about where they were (differences of either sign); a teacher that cannot use its hint is
 * less sure of nearly everything the student says.
 *
 * Worked examples (settings `{ negativeFrac: 0.9, steps: 3 }`):
 * - a step whose OPD tokens differ by `[-6.2, -0.4, -11.2, -0.0001, 0.4]`: 4 of 5 negative (0.8),
 *   below 0.9: the run goes on, and the count of bad steps in a row starts over;
 * - steps 1, 2 and 3 each with 95 % of their tokens negative: after step 3 the run stops with
 *   `steps 1-3: the teacher is worse than the student …`;
 * - steps 1 and 2 bad, step 3 with no OPD tokens (no hints): nothing is judged at step 3, and
 *   the count starts over;
 * - `steps: 0`: the rule is off.
 *
 * Measured (the run above, 10 steps, about 500 OPD tokens a step): 93-96 % of the tokens
 * negative at every step, mean −3.1 to −3.6 nats.
 *
 * @module
 */

import type { ScoredGroup } from "../rl/types.ts";

/** What a step's OPD tokens say of the teacher: `teacher_lp − student_lp` over them. */
export interface TeacherGap {
  /** Tokens that carried an OPD term. */
  tokens: number;
  /** Share of them where the teacher gave the sampled token a lower log-prob than the student. */
  negativeFrac: number;
  /** Mean of `teacher_lp − student_lp`, in nats. */
  mean: number;
}

/** The rule's settings (`scoring.worse_teacher_frac`, `scoring.worse_teacher_steps`). */
export interface WorseTeacherSettings {
  /** A step is bad when at least this share of its OPD tokens is negative. */
  negativeFrac: number;
  /** Bad steps in a row that stop the run; 0: never stop. */
  steps: number;
}

/**
 * `teacher_lp − student_lp` over the tokens of a step's turns that carried an OPD term; null
 * when none did (an `rl` run, or no turn had a hint).
 *
 * @example
 * teacherGap(out.groups); // { tokens: 453, negativeFrac: 0.956, mean: -3.55 }
 */
export function teacherGap(groups: ScoredGroup[]): TeacherGap | null {
  let tokens = 0, negative = 0, sum = 0;
  for (const g of groups) {
    for (const e of g.episodes) {
      for (const t of e.turns) {
        const teacher = t.evidence.teacherLogprobs;
        if (!teacher || t.score.opdMean === undefined) continue;
        const student = t.turn.logprobs;
        for (let k = 0; k < teacher.length; k++) {
          const d = teacher[k] - student[k];
          tokens++;
          sum += d;
          if (d < 0) negative++;
        }
      }
    }
  }
  return tokens === 0 ? null : { tokens, negativeFrac: negative / tokens, mean: sum / tokens };
}

/** One judged step: its number and its gap (null: no OPD tokens). */
export interface TeacherStep {
  /** The step. */
  step: number;
  /** Its teacher gap (null: no OPD tokens). */
  gap: TeacherGap | null;
}

/**
 * The run's verdict after its latest step, given the steps so far (oldest first): the one line
 * that stops it when the last `steps` steps were all bad, else null.
 *
 * @example
 * const bad = (step: number) => ({ step, gap: { tokens: 500, negativeFrac: 0.95, mean: -3.4 } });
 * worseTeacherVerdict([bad(1), bad(2)], { negativeFrac: 0.9, steps: 3 }); // null
 * worseTeacherVerdict([bad(1), bad(2), bad(3)], { negativeFrac: 0.9, steps: 3 });
 * // "steps 1-3: the teacher is worse than the student on its own samples (…)"
 */
export function worseTeacherVerdict(
  history: readonly TeacherStep[],
  s: WorseTeacherSettings,
): string | null {
  if (s.steps <= 0 || history.length < s.steps) return null;
  const last = history.slice(-s.steps);
  if (!last.every((h) => h.gap !== null && h.gap.negativeFrac >= s.negativeFrac)) return null;
  const gaps = last.map((h) => h.gap!);
  const tokens = gaps.reduce((n, g) => n + g.tokens, 0);
  const negative = gaps.reduce((n, g) => n + g.negativeFrac * g.tokens, 0) / tokens;
  const mean = gaps.reduce((n, g) => n + g.mean * g.tokens, 0) / tokens;
  const steps = s.steps === 1
    ? `step ${last[0].step}`
    : `steps ${last[0].step}-${last.at(-1)!.step}`;
  return `${steps}: the teacher is worse than the student on its own samples ` +
    `(teacher − student < 0 on ${pct(negative)} of ${tokens} tokens, mean ${mean.toFixed(2)} ` +
    `nats), so OPD pushes down nearly every sampled token and collapses the policy; use ` +
    `--method rl, or a teacher that uses its hint (teacher.model), or set ` +
    `scoring.worse_teacher_steps 0 to train anyway`;
}

/** A share as a whole percentage, never rounded up to 100 % unless it is. */
function pct(x: number): string {
  return `${x >= 1 ? 100 : Math.min(99, Math.round(x * 100))}%`;
}

/**
 * The rule fed step by step (keeps the last `steps` judged steps).
 *
 * @example
 * const check = new WorseTeacherCheck({ negativeFrac: 0.9, steps: 3 });
 * const line = check.observe(step, teacherGap(out.groups)); // null, or the line to stop with
 */
export class WorseTeacherCheck {
  readonly #history: TeacherStep[] = [];

  /** The rule with `settings` (the share of negative gaps, over how many steps). */
  constructor(readonly settings: WorseTeacherSettings) {}

  /** Records a step's gap; returns the line to stop the run with, or null. */
  observe(step: number, gap: TeacherGap | null): string | null {
    this.#history.push({ step, gap });
    if (this.#history.length > Math.max(1, this.settings.steps)) this.#history.shift();
    return worseTeacherVerdict(this.#history, this.settings);
  }
}
