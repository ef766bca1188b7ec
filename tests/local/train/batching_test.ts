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

Deno.test("batching: sequence buckets are powers of two ≥ 8 and, above 64, 1.5 times one, capped at the context", () => {
  assert.deepEqual([1, 8, 9, 16, 17, 33, 48].map((n) => seqLenBucket(n, 48)), [
    8,
    8,
    16,
    16,
    32,
    48,
    48,
  ]);
  // The first command's datum lengths: 154 tokens pad to 192, not 256.
  assert.deepEqual([64, 65, 94, 97, 124, 154, 193, 300, 700].map((n) => seqLenBucket(n, 1024)), [
    64,
    96,
    96,
    128,
    128,
    192,
    256,
    384,
    768,
  ]);
  assert.equal(seqLenBucket(900, 1024), 1024);
});

Deno.test("batching: plan covers every datum once, longest first, within the budget", () => {
  const lengths = [3, 40, 9, 9, 16, 1, 33, 12];
  const plan = planMicroBatches(CFG, lengths, 64);
  assert.deepEqual(plan.flatMap((mb) => mb.indices).toSorted(), [0, 1, 2, 3, 4, 5, 6, 7]);
  for (const mb of plan) {
    assert.ok(mb.rows * mb.seqLen <= 64 || mb.rows === 1, "within the token budget");
    assert.ok(mb.indices.length <= mb.rows && Number.isInteger(Math.log2(mb.rows)));
    for (const i of mb.indices) assert.ok(lengths[i] <= mb.seqLen);
  }
  assert.deepEqual(plan.map((mb) => [mb.rows, mb.seqLen]), [[1, 48], [1, 48], [4, 16], [2, 8]]);
});

Deno.test("batching: the heap-derived budget allows the bench batch in one call", () => {
  const bench = ModelConfigSchema.parse({
    vocabSize: 512,
    dModel: 128,
    nLayers: 4,
    nHeads: 4,
    maxSeqLen: 128,
  });
  assert.ok(maxRows(bench, 128) >= 16);
  const small = ModelConfigSchema.parse({
    vocabSize: 260,
    dModel: 256,
    nLayers: 6,
    nHeads: 8,
    maxSeqLen: 1024,
  });
  assert.ok(maxRows(small, 1024) * 1024 <= 4096, "local/small stays under the measured ceiling");
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
