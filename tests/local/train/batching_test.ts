import { assert } from "../../assert.ts";
import { ModelConfigSchema } from "../../../lib/local/model/config.ts";
import {
  maxRows,
  packMicroBatch,
  planMicroBatches,
  seqLenBucket,
} from "../../../lib/local/train/batching.ts";
import type { LearnerDatum } from "../../../lib/local/train/types.ts";

const CFG = ModelConfigSchema.parse({
  vocabSize: 16,
  dModel: 16,
  nLayers: 2,
  nHeads: 2,
  maxSeqLen: 48,
});

Deno.test("batching: sequence lengths round up to a multiple of 16, capped at the context", () => {
  assert.deepEqual([1, 8, 16, 17, 33, 47, 48].map((n) => seqLenBucket(n, 48)), [
    16,
    16,
    16,
    32,
    48,
    48,
    48,
  ]);
  assert.deepEqual([154, 900, 1020].map((n) => seqLenBucket(n, 1024)), [160, 912, 1024]);
  // A 55,000-token turn pads by 8 tokens, not to the 65,536 positions of the context.
  assert.equal(seqLenBucket(55_000, 65_536), 55_008);
});

Deno.test("batching: plan covers every datum once, longest first, within the budget", () => {
  const lengths = [3, 40, 9, 9, 16, 1, 33, 12];
  const plan = planMicroBatches(CFG, lengths, 64);
  assert.deepEqual(plan.flatMap((mb) => mb.indices).toSorted(), [0, 1, 2, 3, 4, 5, 6, 7]);
  for (const mb of plan) {
    assert.ok(mb.rows * mb.seqLen <= 64 || mb.rows === 1, "within the token budget");
    assert.equal(mb.indices.length, mb.rows);
    for (const i of mb.indices) assert.ok(lengths[i] <= mb.seqLen);
  }
  assert.deepEqual(plan.map((mb) => [mb.rows, mb.seqLen]), [[1, 48], [1, 48], [4, 16], [2, 16]]);
});

Deno.test("batching: the memory budget allows the bench batch in one call", () => {
  const bench = ModelConfigSchema.parse({
    vocabSize: 512,
    dModel: 128,
    nLayers: 4,
    nHeads: 4,
    maxSeqLen: 128,
  });
  assert.ok(maxRows(bench, 128) >= 16);
  const long = ModelConfigSchema.parse({
    vocabSize: 1441,
    dModel: 128,
    nLayers: 4,
    nHeads: 4,
    maxSeqLen: 65_536,
    positions: "rope",
    attentionWindow: 256,
  });
  assert.equal(maxRows(long, 55_008), 1, "a long turn runs alone");
});

Deno.test("batching: packing pads with weight 0 and fills RL defaults", () => {
  const d: LearnerDatum = {
    tokens: Int32Array.from([5, 6]),
    inputs: {
      target_tokens: { shape: [2], data: Int32Array.from([6, 7]) },
      logprobs: { shape: [2], data: Float32Array.from([-1, -2]) },
      advantages: { shape: [2], data: Float32Array.from([1, 0.5]) },
    },
  };
  const p = packMicroBatch([d], { indices: [0], rows: 2, seqLen: 8 }, 0, true);
  assert.deepEqual(p.shape, [2, 8]);
  assert.deepEqual(Array.from(p.tokens.slice(0, 3)), [5, 6, 0]);
  assert.deepEqual(Array.from(p.weights), [1, 1, ...new Array(14).fill(0)]);
  assert.deepEqual(Array.from(p.logprobs!.slice(0, 3)), [-1, -2, 0]);
});
