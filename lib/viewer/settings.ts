/**
 * A run's scoring settings as the what-if starts from them: its `config.json` read with the
 * config's own schema, in composition's words ({@link MethodSettings}).
 *
 * @module
 */

import { advantageConfig, TrainConfigSchema } from "../config/schema.ts";
import type { MethodSettings } from "../scoring/compose.ts";

/** A run's method settings and loss, as the page's what-if needs them. */
export interface RunSettings {
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
    scoring: {
      method: cfg.scoring.method,
      rewardSource: cfg.scoring.rl_reward,
      hintSource: cfg.scoring.opd_hint === "judge" ? "judge" : "next_state",
      evalMode: cfg.scoring.eval_mode,
      advantages: advantageConfig(cfg.advantages),
      wOpd: cfg.scoring.w_opd,
      wRl: cfg.scoring.w_rl,
      klCoef: cfg.scoring.kl_loss_coef,
    },
    loss: { fn: cfg.optimizer.loss_fn, config: cfg.optimizer.loss_fn_config ?? {} },
  };
}
