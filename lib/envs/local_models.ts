/**
 * The local models an environment is meant for. The local backend's models are tiny GPTs that
 * know only the formats they were pretrained on: `local/games2` has never written a tool call,
 * and only `local/hint` was taught to read OPD's hindsight hint. An environment names the ones
 * that can train on it, and a run with another local model stops before anything trains, in one
 * line naming the model to use, rather than training on groups that can never differ (every
 * call malformed) or on a teacher worse than its student.
 *
 * @module
 */

/** The local models that can train on an environment, the first of each list the one to use. */
export interface LocalModels {
  /** Models that know its format (every method). Absent: any model. */
  readonly train?: readonly string[];
  /**
   * Models that learn it with `--method opd` as their own teacher (the next observation as the
   * hint); empty: none does. Absent: not known; the worse-teacher rule still watches.
   */
  readonly opd?: readonly string[];
  /** The same for `--method combine`. */
  readonly combine?: readonly string[];
}

/** What a run trains on an environment with: its policy model, its teacher and its method. */
export interface LocalRun {
  /** The environment's id. */
  envId: string;
  /** `policy.model`. */
  model: string;
  /** `teacher.model ?? policy.model`. */
  teacher: string;
  /** `scoring.method`. */
  method: "rl" | "opd" | "combine";
  /** `scoring.opd_hint`: only the next observation is a hint these models were taught. */
  hint: "judge" | "next_observation";
  /** `scoring.worse_teacher_steps 0`: the user trains on any teacher anyway. */
  anyTeacher: boolean;
}

/**
 * The line that stops a run whose local model cannot train on the environment, or null. Only
 * `local/*` models are judged (a cloud model is the user's choice).
 *
 * @example
 * localModelMismatch({ train: ["local/tools"] }, {
 *   envId: "tool:GuessTheNumber-v0-easy", model: "local/games2", teacher: "local/games2",
 *   method: "rl", hint: "next_observation", anyTeacher: false,
 * });
 * // "rollout.env_id tool:GuessTheNumber-v0-easy is meant for local/tools: local/games2 cannot
 * //  train on it; pass --model-name local/tools"
 */
export function localModelMismatch(models: LocalModels | undefined, run: LocalRun): string | null {
  if (!models || !run.model.startsWith("local/")) return null;
  const meant = `rollout.env_id ${run.envId} is meant for`;
  if (models.train && !models.train.includes(run.model)) {
    return `${meant} ${models.train.join(" or ")}: ${run.model} cannot train on it; ` +
      `pass --model-name ${models.train[0]}`;
  }
  const teachers = run.method === "rl" ? undefined : models[run.method];
  if (
    !teachers || run.anyTeacher || run.hint !== "next_observation" ||
    !run.teacher.startsWith("local/") || teachers.includes(run.teacher)
  ) return null;
  if (teachers.length === 0) {
    return `rollout.env_id ${run.envId}: no local model learns it with --method ${run.method} ` +
      `(its next observation, the teacher's hint, does not say which move was good: ` +
      `models/README.md, local/hint); use --method rl, or a judge's hints (--hint-source judge), ` +
      `or set scoring.worse_teacher_steps 0 to train anyway`;
  }
  const fix = run.teacher === run.model
    ? `--model-name ${teachers[0]}`
    : `--teacher-model-name ${teachers[0]}`;
  return `${meant} ${teachers.join(" or ")} with --method ${run.method}: ${run.teacher} ` +
    `was not taught to use the hint, so as the teacher it is worse than the student and ` +
    `${run.method} pulls the policy down; pass ${fix}, or use --method rl, or set ` +
    `scoring.worse_teacher_steps 0 to train anyway`;
}
