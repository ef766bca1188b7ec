/**
 * Small helpers shared by every layer: seeded random numbers and seed derivation, statistics,
 * zod error formatting, reading server-sent events, taking files out of an npm tarball.
 *
 * @module
 */

export * from "./random.ts";
export * from "./stats.ts";
export * from "./zod.ts";
export * from "./sse.ts";
export * from "./tarball.ts";
