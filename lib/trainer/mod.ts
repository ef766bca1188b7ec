/**
 * The trainer's core: the one RL step loop ({@link runSteps}) and its step update, the
 * {@link GroupSource} contract every source of groups implements, the failure rules, metrics,
 * the held-out evaluator on the run's rollout options, the run's life (open, resume,
 * checkpoints) and {@link prepareRun}, every check made before a run starts. It imports no
 * integration: environments' schedulers and mixes (lib/sources/), the proxy's sessions
 * (lib/proxy/source.ts) and `train` (lib/train/) are built on it.
 *
 * @module
 */

export * from "./source.ts";
export * from "./loop.ts";
export * from "./update.ts";
export * from "./failures.ts";
export * from "./metrics.ts";
export * from "./evaluate.ts";
export * from "./rollout_options.ts";
export * from "./prepare.ts";
export * from "./run.ts";
export * from "./run_log.ts";
export * from "./supervised.ts";
// Types the trainer's signatures name: the run directory's records, advantage statistics, the loss.
export {
  type CheckpointRecord,
  CheckpointRecordSchema,
  type HeldOutEvaluation,
  HeldOutEvaluationSchema,
  type PolicyScore,
  PolicyScoreSchema,
  type RunDirStatus,
  RunDirStatusSchema,
} from "../rundir/mod.ts";
export type { AdvantageStats } from "../advantages/mod.ts";
export { type LossFnType, LossFnTypeSchema } from "../protocol/mod.ts";
