/**
 * Datums for RL: one builder for every path (env episodes, proxy sessions, OpenReward
 * rollouts), pure and self-checking.
 *
 * @module
 */

export * from "./trajectory.ts";
export * from "./scored.ts";
