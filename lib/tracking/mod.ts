/**
 * Experiment tracking outside the run directory: the W&B mirror of a run (docs/tracking.md).
 *
 * @module
 */

export * from "./settings.ts";
export * from "./wandb_api.ts";
export * from "./wandb.ts";
export * from "./tracker.ts";
