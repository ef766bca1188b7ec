import { assert, assertClose } from "../../assert.ts";
import { initBaseParameters } from "../../../lib/local/model/params.ts";
import { findLocalModel } from "../../../lib/local/models.ts";
import { MASKED } from "../../../lib/local/onnx/mask.ts";
import { type GptRunInput, GptSession } from "../../../lib/local/onnx/session.ts";
import { HostKvCache } from "../../../lib/local/sampler/host_cache.ts";

const CFG = findLocalModel("local/tiny")!.config;
const BASE = initBaseParameters(CFG, 3);
const SEQ = Array.from({ length: 24 }, (_, i) => (i * 31 + 3) % CFG.vocabSize);
const V = CFG.vocabSize;
const empty = () => Array.from({ length: CFG.nLayers }, () => new Float32Array(0));
const ints = (xs: number[]) => BigInt64Array.from(xs, BigInt);
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

/** One row: `tokens` at positions `start..`, over `past` (a one-row cache), every head. */
function input(tokens: number[], start: number, past?: HostKvCache): GptRunInput {
  const t = tokens.length, slots = past?.slots ?? 0;
  const keyBias = new Float32Array(slots + t);
  if (past) keyBias.set(past.keyBias.subarray(0, slots));
  return {
    rows: 1,
    tokens: t,
    slots,
    ids: ints(tokens),
    positions: ints(range(start, start + t)),
    keyBias,
    headIndex: ints(range(0, t)),
    heads: t,
    pastKeys: past?.keys ?? empty(),
    pastValues: past?.values ?? empty(),
  };
}

Deno.test("gpt graph: a prompt run in two parts over a (padded) cache gives the one-shot log-probs; weights as inputs give the same", async () => {
  const gpt = await GptSession.create(CFG, BASE, { threads: 1 });
  const whole = await gpt.run(input(SEQ, 0));
  const split = 10;
  const first = await gpt.run(input(SEQ.slice(0, split), 0));
  // A cache with room to spare: unwritten slots stay masked.
  const cache = new HostKvCache(CFG, 1, 32);
  cache.copySlots(new HostKvCache(CFG, 1, split, first), 0, 0, 0, 0, split);
  assert.equal(cache.keyBias[split], MASKED);
  const rest = await gpt.run(input(SEQ.slice(split), split, cache));
  assertClose(rest.logprobs, whole.logprobs.subarray(split * V), 1e-5, "continued");
  assertClose(first.logprobs, whole.logprobs.subarray(0, split * V), 1e-5, "first part");
  await gpt.release();

  const asInputs = await GptSession.create(CFG, BASE, { threads: 1, weightsAsInputs: true });
  assertClose((await asInputs.run(input(SEQ, 0))).logprobs, whole.logprobs, 1e-5, "as inputs");
  await asInputs.release();
});
