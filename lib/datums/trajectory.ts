/**
 * Datums for RL: one builder for every path (env episodes, proxy sessions, OPD).
 *
 * A trajectory is a list of turns, each an observation (prompt tokens) and the sampled action
 * tokens with their sampler log-probs and advantages. While each observation extends the
 * sequence built so far (prompt + previous actions + new tokens), the turns merge into one
 * datum, so shared prefixes are trained once; when an observation breaks the prefix, a new
 * datum starts (as tinker-cookbook's `trajectory_to_data` does).
 *
 * Within a datum, observation tokens get log-prob 0 and advantage 0; action tokens get their
 * sampler log-probs and advantages (a scalar broadcast, or one per token for OPD). The model
 * input is the sequence without its last token; targets, log-probs and advantages are the
 * sequence's values shifted left by one. Every datum is checked before it leaves.
 *
 * @module
 */

import type { Datum } from "../protocol/mod.ts";
import { ModelInput, TensorData } from "../tinker/types.ts";

/** One turn of a trajectory, in tokens. */
export interface TurnTokens {
  /** The full prompt of this turn (for turn 2+, normally the previous sequence plus new tokens). */
  observation: number[];
  /** Sampled tokens. */
  action: number[];
  /** Sampler log-probs of `action`, one per token. */
  logprobs: number[];
  /** The turn's advantage: one number for every action token, or one per token. */
  advantage: number | number[];
  /** False to train nothing on this turn (e.g. a parse error): its advantages become 0. */
  train?: boolean;
}

/** A datum that fails its self-check; the message names the datum and what is wrong. */
export class DatumCheckError extends Error {
  /** The error's name, for logs. */
  override name = "DatumCheckError";
}

/**
 * The datums of one trajectory, for `importance_sampling`, `ppo`, `cispo` or `dro`.
 *
 * @example
 * const [d] = trajectoryToDatums([
 *   { observation: [1, 2], action: [3, 4], logprobs: [-0.5, -0.1], advantage: 1 },
 *   { observation: [1, 2, 3, 4, 5], action: [6], logprobs: [-0.2], advantage: 1 },
 * ]);
 * // one datum: input [1,2,3,4,5], targets [2,3,4,5,6], advantages [0,1,1,0,1]
 */
export function trajectoryToDatums(turns: TurnTokens[]): Datum[] {
  const datums: Datum[] = [];
  let seq: number[] = [], lps: number[] = [], advs: number[] = [];
  const flush = () => {
    if (seq.length >= 2) datums.push(checkDatum(makeDatum(seq, lps, advs), datums.length));
    seq = [];
    lps = [];
    advs = [];
  };
  turns.forEach((turn, i) => {
    if (turn.action.length !== turn.logprobs.length) {
      throw new DatumCheckError(
        `turn ${i}: ${turn.action.length} action tokens but ${turn.logprobs.length} logprobs`,
      );
    }
    const perToken = typeof turn.advantage === "number"
      ? turn.action.map(() => turn.advantage as number)
      : turn.advantage;
    if (perToken.length !== turn.action.length) {
      throw new DatumCheckError(
        `turn ${i}: ${turn.action.length} action tokens but ${perToken.length} advantages`,
      );
    }
    if (!extends_(turn.observation, seq)) flush();
    const fresh = turn.observation.slice(seq.length);
    seq.push(...fresh, ...turn.action);
    lps.push(...fresh.map(() => 0), ...turn.logprobs);
    const train = turn.train ?? true;
    advs.push(...fresh.map(() => 0), ...perToken.map((a) => (train ? a : 0)));
  });
  flush();
  return datums;
}

/** The datum of a whole sequence whose log-probs and advantages are aligned with its tokens. */
function makeDatum(seq: number[], lps: number[], advs: number[]): Datum {
  const n = seq.length - 1;
  return {
    model_input: ModelInput.fromInts(seq.slice(0, n)),
    loss_fn_inputs: {
      target_tokens: TensorData.fromArray(seq.slice(1), "int64"),
      logprobs: TensorData.fromArray(lps.slice(1)),
      advantages: TensorData.fromArray(advs.slice(1)),
    },
  };
}

/**
 * Checks a datum before it is sent: every loss input has one value per input token, values
 * are finite, and targets are the inputs shifted by one (target t = input t+1), which catches
 * an off-by-one that would otherwise train silently on the wrong tokens.
 */
export function checkDatum(d: Datum, index = 0): Datum {
  const input = ModelInput.toInts(d.model_input);
  const n = input.length;
  for (const [key, t] of Object.entries(d.loss_fn_inputs)) {
    if (t.data.length !== n) {
      throw new DatumCheckError(
        `datum ${index}: ${key} has ${t.data.length} values for ${n} input tokens`,
      );
    }
    const bad = t.data.findIndex((x) => !Number.isFinite(x));
    if (bad >= 0) throw new DatumCheckError(`datum ${index}: ${key}[${bad}] is ${t.data[bad]}`);
  }
  const targets = d.loss_fn_inputs.target_tokens?.data;
  if (targets) {
    for (let t = 0; t + 1 < n; t++) {
      if (targets[t] !== input[t + 1]) {
        throw new DatumCheckError(
          `datum ${index}: target_tokens[${t}] = ${targets[t]} but input[${t + 1}] = ${
            input[t + 1]
          }; ` +
            "targets must be the inputs shifted left by one",
        );
      }
    }
  }
  return d;
}

function extends_(observation: number[], prefix: number[]): boolean {
  if (prefix.length === 0 || observation.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (observation[i] !== prefix[i]) return false;
  return true;
}
