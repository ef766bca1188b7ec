/**
 * The OpenAI-compatible proxy (OpenClaw's design): an endpoint any OpenAI client can talk to,
 * serving the policy from Tinker, keeping sessions, and handing every finished main turn to
 * training; plus the reference agent that plays this project's environments through it.
 *
 * @module
 */

export * from "./errors.ts";
export * from "./request.ts";
export * from "./metadata.ts";
export * from "./completion.ts";
export * from "./stream.ts";
export * from "./sessions.ts";
export * from "./matching.ts";
export * from "./policy.ts";
export * from "./generate.ts";
export * from "./server.ts";
export * from "./records.ts";
export * from "./scorer.ts";
export * from "./serve.ts";
export * from "./agent.ts";
