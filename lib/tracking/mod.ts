/**
 * Experiment tracking outside the run directory: the W&B mirror of a run, and its episodes as
 * OpenReward rollouts (docs/tracking.md).
 *
 * @module
 */

export * from "./settings.ts";
export * from "./netrc.ts";
export * from "./wandb_api.ts";
export * from "./wandb.ts";
export * from "./tracker.ts";
export * from "./openreward_rollouts.ts";
