/**
 * The Open Reward Standard: a client of ORS servers (self-hosted or the hosted OpenReward
 * gateway) whose environments are environments of this project, and a server that serves this
 * project's tool environments to any ORS client.
 *
 * @module
 */

export * from "./errors.ts";
export * from "./wire.ts";
export * from "./sse.ts";
export * from "./http.ts";
export * from "./session.ts";
export * from "./client.ts";
export * from "./sessions.ts";
export * from "./app.ts";
export * from "./server.ts";
export * from "./rewards.ts";
