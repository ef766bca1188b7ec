/**
 * Sources of groups on environments, above the trainer's core: a plan says what a step plays
 * and how its groups are judged (one environment, ./environment.ts, or an `environments:` mix,
 * ./mix.ts), and a scheduler says when (./sync.ts for `sync` and `stream`, ./async.ts for
 * `async`). {@link scheduleRollouts} puts a plan on the scheduler of the run's `pipeline.mode`.
 *
 * @module
 */

export * from "./plan.ts";
export * from "./environment.ts";
export * from "./mix.ts";
export * from "./mix_environments.ts";
export * from "./mix_evaluate.ts";
export * from "./mix_metrics.ts";
export * from "./collection.ts";
export * from "./sync.ts";
export * from "./async.ts";
export * from "./schedule.ts";
