/**
 * Scoring in two halves: evidence gathering (every network call: PRM votes, hints, teacher and
 * reference log-probs) and pure composition per method (`rl`, `opd`, `combine`, KL penalty), on
 * OpenClaw's rules and judges; and the worse-teacher rule that stops an `opd`/`combine` run whose
 * teacher cannot teach.
 *
 * @module
 */

export * from "./evidence.ts";
export * from "./compose.ts";
export * from "./sources.ts";
export * from "./judges.ts";
export * from "./rules.ts";
export * from "./prompts.ts";
export * from "./teacher_check.ts";
export * from "./rescore.ts";
