/**
 * User environments from a module: the module calls `register(id, factory)` when imported, so a
 * run can name its environment by id (`deno task train --env-module ./my_env.ts --env-id my:Env`).
 *
 * @module
 */

import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";

/** A module that could not be imported; the message names it and the cause. */
export class EnvModuleError extends Error {
  /** The error's name, for logs. */
  override name = "EnvModuleError";
}

/**
 * Imports an environment module (a path relative to the working directory, or a URL).
 *
 * @example
 * await importEnvModule("./my_env.ts"); // registers my:Env
 * const env = make("my:Env");
 */
export async function importEnvModule(path: string): Promise<void> {
  const url = /^[a-z]+:/i.test(path) && !isAbsolute(path)
    ? path
    : pathToFileURL(resolve(Deno.cwd(), path)).href;
  try {
    await import(url);
  } catch (e) {
    const cause = (e as Error).message.split("\n")[0];
    throw new EnvModuleError(`env_module ${path}: could not import it (${cause})`);
  }
}
