/**
 * Request checks the server runs BEFORE it enqueues work, so that a bad request fails fast
 * with a 400 naming the datum and key instead of failing later inside a jitted call (or,
 * worse, training on garbage: an out-of-range token id silently gathers a wrong row).
 *
 * @module
 */

import { UserInputError } from "../errors.ts";
import type { ModelConfig } from "../model/config.ts";
import { numel } from "../tensors.ts";
import { isLossFnName, LOSS_FN_NAMES, type LossDefinition, LOSSES } from "./losses.ts";
import type { AdamParams, LearnerDatum, LearnerTensor } from "./types.ts";

/** Inputs that hold token ids rather than real values. */
const TOKEN_INPUTS = new Set(["target_tokens"]);
/** Inputs that may be `[N, K]` when the loss allows 2-D targets. */
const INPUTS_2D = new Set(["target_tokens", "weights"]);

/**
 * Checks a forward / forward_backward request against the model and the loss's contract.
 *
 * @throws {UserInputError} naming the datum index and key, and listing what is allowed.
 */
export function validateForwardBackward(
  config: ModelConfig,
  datums: readonly LearnerDatum[],
  lossFn: string,
  lossFnConfig: Readonly<Record<string, number>>,
): void {
  if (!isLossFnName(lossFn)) {
    throw new UserInputError(
      `unknown loss_fn ${JSON.stringify(lossFn)}; allowed: ${LOSS_FN_NAMES.join(", ")}`,
    );
  }
  const loss = LOSSES[lossFn];
  validateLossConfig(lossFn, loss, lossFnConfig);
  if (datums.length === 0) throw new UserInputError("data is empty: give at least one datum");
  datums.forEach((d, i) => validateDatum(config, loss, lossFn, d, i));
}

/**
 * Checks `adam_params`: finite values, `0 ≤ beta < 1`, non-negative rates and norms.
 *
 * @throws {UserInputError} naming the field.
 */
export function validateAdamParams(params: AdamParams): void {
  const checks: Array<[keyof AdamParams, (x: number) => boolean, string]> = [
    ["learning_rate", (x) => x >= 0, ">= 0"],
    ["beta1", (x) => x >= 0 && x < 1, "in [0, 1)"],
    ["beta2", (x) => x >= 0 && x < 1, "in [0, 1)"],
    ["eps", (x) => x >= 0, ">= 0"],
    ["weight_decay", (x) => x >= 0, ">= 0"],
    ["grad_clip_norm", (x) => x >= 0, ">= 0 (0 turns clipping off)"],
  ];
  for (const [key, ok, rule] of checks) {
    const x = params[key];
    if (x === undefined) continue;
    if (typeof x !== "number" || !Number.isFinite(x) || !ok(x)) {
      throw new UserInputError(`adam_params.${key} is ${x}; it must be a finite number ${rule}`);
    }
  }
}

function validateLossConfig(
  name: string,
  loss: LossDefinition,
  given: Readonly<Record<string, number>>,
): void {
  const allowed = Object.keys(loss.config);
  for (const [key, value] of Object.entries(given)) {
    if (!allowed.includes(key)) {
      throw new UserInputError(
        `loss_fn_config key ${JSON.stringify(key)} is not accepted by ${name}; allowed: ` +
          (allowed.length ? allowed.join(", ") : "none"),
      );
    }
    if (typeof value !== "number" || !Number.isFinite(value)) {
      throw new UserInputError(`loss_fn_config.${key} is ${value}; it must be a finite number`);
    }
  }
  const lo = given.clip_low_threshold ?? loss.config.clip_low_threshold;
  const hi = given.clip_high_threshold ?? loss.config.clip_high_threshold;
  if (lo !== undefined && hi !== undefined && lo > hi) {
    throw new UserInputError(
      `loss_fn_config: clip_low_threshold (${lo}) must not exceed clip_high_threshold (${hi})`,
    );
  }
}

function validateDatum(
  config: ModelConfig,
  loss: LossDefinition,
  lossFn: string,
  d: LearnerDatum,
  i: number,
): void {
  const where = `data[${i}]`;
  const n = d.tokens.length;
  if (n === 0) throw new UserInputError(`${where}.model_input is empty`);
  if (n > config.maxSeqLen) {
    throw new UserInputError(
      `${where}.model_input has ${n} tokens, more than the model's context of ${config.maxSeqLen}`,
    );
  }
  checkTokenIds(`${where}.model_input`, d.tokens, config.vocabSize);

  const allowed = [...loss.requiredInputs, ...loss.optionalInputs];
  for (const key of loss.requiredInputs) {
    if (!(key in d.inputs)) {
      throw new UserInputError(
        `${where}.loss_fn_inputs is missing ${key} (${lossFn} requires ` +
          `${loss.requiredInputs.join(", ")})`,
      );
    }
  }
  for (const [key, t] of Object.entries(d.inputs)) {
    const at = `${where}.loss_fn_inputs.${key}`;
    if (!allowed.includes(key)) {
      throw new UserInputError(
        `${at} is not an input of ${lossFn}; allowed: ${allowed.join(", ")}`,
      );
    }
    checkShape(at, t, n, loss.allows2d && INPUTS_2D.has(key));
    if (TOKEN_INPUTS.has(key)) checkTokenIds(at, t.data, config.vocabSize);
    else checkFinite(at, t.data);
  }
  const targets = d.inputs.target_tokens, weights = d.inputs.weights;
  if (weights && targets.shape.join() !== weights.shape.join()) {
    throw new UserInputError(
      `${where}.loss_fn_inputs.weights has shape [${weights.shape}] but target_tokens has ` +
        `[${targets.shape}]; they must match`,
    );
  }
}

/** `[N]`, or `[N, K]` (K ≥ 1) where 2-D is allowed; the data length must match the shape. */
function checkShape(at: string, t: LearnerTensor, n: number, allow2d: boolean): void {
  const shape = t.shape;
  const ok = (shape.length === 1 || (allow2d && shape.length === 2 && shape[1] >= 1)) &&
    shape[0] === n;
  if (!ok) {
    const want = allow2d ? `[${n}] or [${n}, K]` : `[${n}]`;
    throw new UserInputError(
      `${at} has shape [${shape}], expected ${want} (N = ${n} is the model_input length)`,
    );
  }
  if (t.data.length !== numel(shape)) {
    throw new UserInputError(
      `${at} has ${t.data.length} values, but its shape [${shape}] needs ${numel(shape)}`,
    );
  }
}

function checkTokenIds(at: string, ids: ArrayLike<number>, vocabSize: number): void {
  for (let j = 0; j < ids.length; j++) {
    const id = ids[j];
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize) {
      throw new UserInputError(
        `${at}[${j}] is ${id}, not a token id in [0, ${vocabSize}) (the model's vocabulary)`,
      );
    }
  }
}

function checkFinite(at: string, values: ArrayLike<number>): void {
  for (let j = 0; j < values.length; j++) {
    if (!Number.isFinite(values[j])) {
      throw new UserInputError(`${at}[${j}] is ${values[j]}; values must be finite`);
    }
  }
}
