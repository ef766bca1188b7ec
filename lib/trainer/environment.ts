/**
 * The checks of a run's environment, made once before it starts: its module loads, its id is
 * registered, its wrappers exist. A mistake is a {@link ConfigError} naming the setting.
 *
 * @module
 */

import { ConfigError } from "../config/load.ts";
import { make, UnknownEnvError } from "../envs/registry.ts";
import { wrapAll } from "../envs/wrappers.ts";
import type { AnyEnv } from "../envs/types.ts";
import { EnvModuleError, importEnvModule } from "../envs/modules.ts";

/** Imports `rollout.env_module`; a module that fails to load is a config error. */
export async function importEnvModuleChecked(path: string): Promise<void> {
  try {
    await importEnvModule(path);
  } catch (e) {
    if (e instanceof EnvModuleError) throw new ConfigError(`rollout.${e.message}`);
    throw e;
  }
}

/**
 * A maker of `envId` wrapped in `wrappers`, checked once now: an unknown id or wrapper is a
 * config error naming `setting` (the key that gave the id).
 */
export function envFactory(envId: string, wrappers: string, setting: string): () => AnyEnv {
  try {
    make(envId);
  } catch (e) {
    if (e instanceof UnknownEnvError) throw new ConfigError(`${setting}: ${e.message}`);
    throw e;
  }
  try {
    wrapAll(make(envId), wrappers);
  } catch (e) {
    throw new ConfigError(`rollout.env_wrappers: ${(e as Error).message}`);
  }
  return () => wrapAll(make(envId), wrappers);
}
