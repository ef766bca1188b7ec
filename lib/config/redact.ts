/**
 * A config as it may be written down: its secret values hidden.
 *
 * @module
 */

import type { TrainConfig } from "./schema.ts";

/**
 * The config with secret values hidden (for a run's config.json and trackers).
 *
 * @example
 * redactSecrets(cfg).secrets; // { OPENREWARD_API_KEY: "***" }
 */
export function redactSecrets(cfg: TrainConfig): TrainConfig {
  const hide = (s: Record<string, string | null> | null) =>
    s && Object.fromEntries(Object.entries(s).map(([k, v]) => [k, v === null ? null : "***"]));
  return {
    ...cfg,
    secrets: hide(cfg.secrets)!,
    environments: Object.fromEntries(
      Object.entries(cfg.environments).map(([k, e]) => [k, { ...e, secrets: hide(e.secrets) }]),
    ),
  };
}
