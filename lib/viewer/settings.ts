/**
 * A run's scoring settings as the what-if starts from them: its `config.json` read with the
 * config's own schema, in composition's words ({@link MethodSettings}).
 *
 * @module
 */

import { advantageConfig, TrainConfigSchema } from "../config/schema.ts";
import { type MethodSettings, methodSettingsOf } from "../scoring/compose.ts";

/** A run's method settings and loss, as the page's what-if needs them. */
export interface RunSettings {
  /** The run's method settings. */
  scoring: MethodSettings;
  /** The loss the run trained with (`optimizer.loss_fn`) and its settings. */
  loss: { fn: string; config: Record<string, unknown> };
}

/** The settings of a run's `config.json` (parsed JSON); null when it is not a training config. */
export function runSettings(config: unknown): RunSettings | null {
  const parsed = TrainConfigSchema.safeParse(config);
  if (!parsed.success) return null;
  const cfg = parsed.data;
  return {
    scoring: methodSettingsOf(cfg.scoring, advantageConfig(cfg.advantages)),
    loss: { fn: cfg.optimizer.loss_fn, config: cfg.optimizer.loss_fn_config ?? {} },
  };
}
