import { assert } from "../../assert.ts";
import { UserInputError } from "../../../lib/local/errors.ts";
import { ModelConfigSchema } from "../../../lib/local/model/config.ts";
import type { LearnerDatum } from "../../../lib/local/train/types.ts";
import { validateAdamParams, validateForwardBackward } from "../../../lib/local/train/validate.ts";

const CFG = ModelConfigSchema.parse({
  vocabSize: 10,
  dModel: 8,
  nLayers: 1,
  nHeads: 2,
  maxSeqLen: 6,
});

const f32 = (xs: number[]) => ({ shape: [xs.length], data: Float32Array.from(xs) });
const i32 = (xs: number[]) => ({ shape: [xs.length], data: Int32Array.from(xs) });

function ce(): LearnerDatum {
  return {
    tokens: Int32Array.from([1, 2, 3]),
    inputs: { target_tokens: i32([2, 3, 4]), weights: f32([0, 1, 1]) },
  };
}

function rl(): LearnerDatum {
  return {
    tokens: Int32Array.from([1, 2, 3]),
    inputs: {
      target_tokens: i32([2, 3, 4]),
      logprobs: f32([-1, -1, -1]),
      advantages: f32([0, 1, 1]),
    },
  };
}

function rejects(
  data: LearnerDatum[],
  lossFn: string,
  config: Record<string, number>,
  pattern: RegExp,
): void {
  assert.throws(() => validateForwardBackward(CFG, data, lossFn, config), (e: unknown) => {
    assert.ok(e instanceof UserInputError, `expected UserInputError, got ${e}`);
    assert.match(e.message, pattern);
    return true;
  });
}

Deno.test("validate: well-formed requests pass, for every loss", () => {
  validateForwardBackward(CFG, [ce(), ce()], "cross_entropy", {});
  for (const loss of ["importance_sampling", "ppo", "cispo", "dro"]) {
    validateForwardBackward(CFG, [rl()], loss, {});
  }
  validateForwardBackward(CFG, [rl()], "ppo", {
    clip_low_threshold: 0.9,
    clip_high_threshold: 1.1,
  });
  validateForwardBackward(CFG, [rl()], "dro", { beta: 0.1 });
  const withWeights = rl();
  withWeights.inputs.weights = f32([1, 0.5, 0]);
  validateForwardBackward(CFG, [withWeights], "importance_sampling", {});
  const topK = ce();
  topK.inputs.target_tokens = { shape: [3, 2], data: Int32Array.from([1, 2, 3, 4, 5, 6]) };
  topK.inputs.weights = { shape: [3, 2], data: Float32Array.from([0.5, 0.5, 1, 0, -1, 2]) };
  validateForwardBackward(CFG, [topK], "cross_entropy", {});
});

Deno.test("validate: loss_fn and loss_fn_config", () => {
  rejects([ce()], "mse", {}, /unknown loss_fn "mse"; allowed: cross_entropy, importance_sampling/);
  rejects([rl()], "ppo", { beta: 1 }, /key "beta" is not accepted by ppo; allowed: clip_low/);
  rejects([ce()], "cross_entropy", { x: 1 }, /by cross_entropy; allowed: none/);
  rejects([rl()], "ppo", { clip_low_threshold: NaN }, /clip_low_threshold is NaN/);
  rejects([rl()], "cispo", { clip_low_threshold: 5 }, /must not exceed clip_high_threshold \(4\)/);
});

Deno.test("validate: empty data, missing and unknown inputs", () => {
  rejects([], "cross_entropy", {}, /data is empty/);
  const missing = rl();
  delete missing.inputs.advantages;
  rejects([rl(), missing], "ppo", {}, /data\[1\]\.loss_fn_inputs is missing advantages/);
  const extra = rl();
  extra.inputs.mask = f32([1, 1, 1]);
  rejects([extra], "ppo", {}, /data\[0\]\.loss_fn_inputs\.mask is not an input of ppo; allowed:/);
  rejects([rl()], "cross_entropy", {}, /missing weights/);
});

Deno.test("validate: shapes must match the model_input length", () => {
  const short = ce();
  short.inputs.weights = f32([1, 1]);
  rejects(
    [short],
    "cross_entropy",
    {},
    /data\[0\]\.loss_fn_inputs\.weights has shape \[2\], expected \[3\] or \[3, K\]/,
  );
  const twoD = rl();
  twoD.inputs.advantages = { shape: [3, 1], data: Float32Array.from([1, 1, 1]) };
  rejects([twoD], "ppo", {}, /advantages has shape \[3,1\], expected \[3\]/);
  const lying = ce();
  lying.inputs.weights = { shape: [3], data: Float32Array.from([1, 1, 1, 1]) };
  rejects([lying], "cross_entropy", {}, /has 4 values, but its shape \[3\] needs 3/);
  const mismatch = ce();
  mismatch.inputs.target_tokens = { shape: [3, 2], data: Int32Array.from([1, 2, 3, 4, 5, 6]) };
  rejects([mismatch], "cross_entropy", {}, /weights has shape \[3\] but target_tokens has \[3,2\]/);
});

Deno.test("validate: token ids, context length, non-finite values", () => {
  const badToken = ce();
  badToken.tokens = Int32Array.from([1, 10, 3]);
  rejects(
    [badToken],
    "cross_entropy",
    {},
    /data\[0\]\.model_input\[1\] is 10, not a token id in \[0, 10\)/,
  );
  const badTarget = ce();
  badTarget.inputs.target_tokens = i32([2, -1, 4]);
  rejects(
    [ce(), badTarget],
    "cross_entropy",
    {},
    /data\[1\]\.loss_fn_inputs\.target_tokens\[1\] is -1/,
  );
  const long = ce();
  long.tokens = Int32Array.from([1, 2, 3, 4, 5, 6, 7]);
  rejects(
    [long],
    "cross_entropy",
    {},
    /model_input has 7 tokens, more than the model's context of 6/,
  );
  const empty = ce();
  empty.tokens = new Int32Array(0);
  rejects([empty], "cross_entropy", {}, /data\[0\]\.model_input is empty/);
  const nan = rl();
  nan.inputs.logprobs = f32([-1, Infinity, -1]);
  rejects([nan], "importance_sampling", {}, /logprobs\[1\] is Infinity; values must be finite/);
});

Deno.test("validate: adam_params", () => {
  validateAdamParams({ learning_rate: 1e-3, beta1: 0.9, beta2: 0.95, eps: 1e-12 });
  assert.throws(() => validateAdamParams({ learning_rate: -1 }), /learning_rate is -1/);
  assert.throws(() => validateAdamParams({ beta2: 1 }), /beta2 is 1; .* in \[0, 1\)/);
  assert.throws(() => validateAdamParams({ grad_clip_norm: NaN }), UserInputError);
});
