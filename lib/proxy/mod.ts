/**
 * The proxy (OpenClaw's design): chat completions, OpenAI's Responses and Anthropic's Messages,
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
export * from "./session_types.ts";
export * from "./sessions.ts";
export * from "./matching.ts";
export * from "./policy.ts";
export * from "./generate.ts";
export * from "./bridge.ts";
export * from "./turn.ts";
export * from "./options.ts";
export * from "./app.ts";
export * from "./serve_turn.ts";
export * from "./server.ts";
export * from "./responses.ts";
export * from "./messages.ts";
export * from "./records.ts";
export * from "./scorer.ts";
export * from "./serve.ts";
export * from "./agent.ts";
