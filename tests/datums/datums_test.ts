import { assert } from "../assert.ts";
import { checkDatum, DatumCheckError, trajectoryToDatums } from "../../lib/datums/mod.ts";
import { datum } from "../../lib/tinker/mod.ts";
import type { Datum } from "../../lib/protocol/mod.ts";

const view = (d: Datum) => ({
  input: d.model_input.chunks.flatMap((c) => (c.type === "encoded_text" ? c.tokens : [])),
  targets: d.loss_fn_inputs.target_tokens.data,
  logprobs: d.loss_fn_inputs.logprobs.data,
  advantages: d.loss_fn_inputs.advantages.data,
});

Deno.test("datums: one turn: observation masked, action carries logprobs and advantage, shifted", () => {
  const [d] = trajectoryToDatums([{
    observation: [1, 2, 3],
    action: [4, 5],
    logprobs: [-0.5, -0.25],
    advantage: 2,
  }]);
  assert.deepEqual(view(d), {
    input: [1, 2, 3, 4],
    targets: [2, 3, 4, 5],
    logprobs: [0, 0, -0.5, -0.25],
    advantages: [0, 0, 2, 2],
  });
});

Deno.test("datums: turns merge while each observation extends the sequence", () => {
  const ds = trajectoryToDatums([
    { observation: [1, 2], action: [3, 4], logprobs: [-0.5, -0.1], advantage: 1 },
    { observation: [1, 2, 3, 4, 5], action: [6], logprobs: [-0.2], advantage: -1 },
  ]);
  assert.equal(ds.length, 1);
  assert.deepEqual(view(ds[0]), {
    input: [1, 2, 3, 4, 5],
    targets: [2, 3, 4, 5, 6],
    logprobs: [0, -0.5, -0.1, 0, -0.2],
    advantages: [0, 1, 1, 0, -1],
  });
});

Deno.test("datums: an observation that breaks the prefix starts a new datum", () => {
  const ds = trajectoryToDatums([
    { observation: [1, 2], action: [3], logprobs: [-1], advantage: 1 },
    { observation: [9, 2, 3, 7], action: [8], logprobs: [-2], advantage: 1 },
  ]);
  assert.equal(ds.length, 2);
  assert.deepEqual(view(ds[1]).input, [9, 2, 3, 7]);
  assert.deepEqual(view(ds[1]).advantages, [0, 0, 0, 1]);
});

Deno.test("datums: per-token advantages (OPD) and untrained turns", () => {
  const [d] = trajectoryToDatums([
    { observation: [1], action: [2, 3], logprobs: [-1, -1], advantage: [0.3, -0.7] },
    { observation: [1, 2, 3, 4], action: [5], logprobs: [-1], advantage: 5, train: false },
  ]);
  assert.deepEqual(view(d).advantages, [0.3, -0.7, 0, 0]);
  assert.deepEqual(
    view(d).logprobs,
    [-1, -1, 0, -1],
    "sampler logprobs are kept even when untrained",
  );
});

Deno.test("datums: mismatched lengths and bad values are clear errors", () => {
  assert.throws(
    () => trajectoryToDatums([{ observation: [1], action: [2, 3], logprobs: [-1], advantage: 1 }]),
    /2 action tokens but 1 logprobs/,
  );
  assert.throws(
    () =>
      trajectoryToDatums([{
        observation: [1],
        action: [2, 3],
        logprobs: [-1, -1],
        advantage: [1],
      }]),
    /2 action tokens but 1 advantages/,
  );
  assert.throws(
    () => trajectoryToDatums([{ observation: [1], action: [2], logprobs: [NaN], advantage: 1 }]),
    (e) => e instanceof DatumCheckError && /logprobs\[0\] is NaN/.test(e.message),
  );
});

Deno.test("datums: the self-check catches a wrong shift and a wrong length", () => {
  const good = datum([1, 2, 3], { target_tokens: [2, 3, 4], weights: [1, 1, 1] });
  assert.equal(checkDatum(good), good);
  const unshifted = datum([1, 2, 3], { target_tokens: [1, 2, 3], weights: [1, 1, 1] });
  assert.throws(() => checkDatum(unshifted), /shifted left by one/);
  const short = datum([1, 2, 3], { target_tokens: [2, 3], weights: [1, 1, 1] });
  assert.throws(() => checkDatum(short), /target_tokens has 2 values for 3 input tokens/);
});
