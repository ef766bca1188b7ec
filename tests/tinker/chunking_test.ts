import { assert } from "../assert.ts";
import {
  chunkData,
  estimateDatumBytes,
  mergeForwardBackwardOutputs,
} from "../../lib/tinker/chunking.ts";
import { datum } from "../../lib/tinker/mod.ts";

const d = (n: number) =>
  datum(Array(n).fill(1), { target_tokens: Array(n).fill(2), weights: Array(n).fill(1) });

Deno.test("chunking: splits by datum count and by estimated bytes, keeping order", () => {
  const data = [d(3), d(3), d(3), d(3), d(3)];
  assert.deepEqual(chunkData(data, { maxDatums: 2, maxBytes: 1e9 }).map((c) => c.length), [
    2,
    2,
    1,
  ]);
  const size = estimateDatumBytes(data[0]);
  assert.equal(size, 90);
  assert.deepEqual(chunkData(data, { maxDatums: 100, maxBytes: 2 * size }).map((c) => c.length), [
    2,
    2,
    1,
  ]);
  assert.deepEqual(
    chunkData([d(50)], { maxDatums: 1, maxBytes: 10 }).map((c) => c.length),
    [1],
    "an oversized datum goes alone",
  );
  assert.equal(chunkData(data, { maxDatums: 2, maxBytes: 1e9 })[2][0], data[4]);
});

Deno.test("chunking: metrics merge by their reduction; outputs concatenate", () => {
  const out = (n: number, metrics: Record<string, number>) => ({
    loss_fn_output_type: "ArrayRecord",
    loss_fn_outputs: Array.from({ length: n }, (_, i) => ({
      logprobs: { data: [n * 10 + i], dtype: "float32" as const, shape: [1] },
    })),
    metrics,
  });
  const merged = mergeForwardBackwardOutputs([
    out(1, { "loss:sum": 2, "frac:mean": 1, "lo:min": 3, "hi:max": 3, "odd:unique": 1 }),
    out(3, { "loss:sum": 5, "frac:mean": 0, "lo:min": -1, "hi:max": 7, "odd:unique": 2 }),
  ]);
  assert.deepEqual(merged.metrics, { "loss:sum": 7, "frac:mean": 0.25, "lo:min": -1, "hi:max": 7 });
  assert.deepEqual(merged.loss_fn_outputs.map((o) => o.logprobs.data[0]), [10, 30, 31, 32]);
});
