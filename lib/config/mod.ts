/**
 * The training configuration: the nested schema, the seeds' aliases, the list of settings, and
 * loading from defaults, a config file, environment variables, flags and `--overrides`.
 *
 * @module
 */

export * from "./schema.ts";
export * from "./aliases.ts";
export * from "./fields.ts";
export * from "./load.ts";
export * from "./describe.ts";
export * from "./redact.ts";
