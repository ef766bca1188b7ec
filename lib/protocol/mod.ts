/**
 * Tinker's wire protocol, shared by the client (`lib/tinker/`) and the local backend's server
 * (`lib/local/server/`): zod schemas of every body, and the protobuf codec of SDK 0.25.
 *
 * @module
 */

export * from "./types.ts";
export * from "./requests.ts";
export * from "./responses.ts";
export * from "./proto.ts";
export * from "./proto_output.ts";
export * from "./proto_sample.ts";
export * from "./paths.ts";
export * from "./wire_shapes.ts";
