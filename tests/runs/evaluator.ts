/**
 * The evaluator the runs server scores checkpoints with, as its entry points (scripts/runs.ts,
 * scripts/mcp.ts) hand it in: the trainer's own.
 *
 * @module
 */

import type { HeldOutEvaluator } from "../../lib/runs/eval_queue.ts";
import { evaluateHeldOut, heldOutEnvironment } from "../../lib/trainer/evaluate.ts";

/** The trainer's held-out evaluator. */
export const HELD_OUT_EVALUATOR: HeldOutEvaluator = { evaluateHeldOut, heldOutEnvironment };
