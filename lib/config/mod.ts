/**
 * The training configuration: schema and loading from defaults, a config file, environment
 * variables, flags and `--overrides`.
 *
 * @module
 */

export * from "./schema.ts";
export * from "./load.ts";
