/**
 * Shape buckets shared by the learner and the sampler: powers of two. jax-js compiles a jitted
 * function once per input shape, so every length is padded up to a bucket, and a handful of
 * buckets means a handful of compiles over a whole run.
 *
 * Why not finer buckets (less padding): jax-js's wasm allocator reuses a freed buffer only for
 * a request of the same size class and never coalesces, so every distinct shape's working set
 * stays allocated for the life of the process. Measured on `local/games` (LoRA forward_backward,
 * 8 rows): 512-token rows left the heap at 1.1 GiB; adding 640 and 768 (four buckets per
 * octave) took it to 2.4 and 3.3 GiB, and 1024 then ran out of the 4 GiB heap. With powers of
 * two the same lengths make three shapes (256, 512, 1024) and the heap settles at 2.4 GiB
 * (`bench/heap_probe.ts learner 500 1000 250 500 1000 600`; the four-per-octave figures are the same
 * lengths, 500 600 700 1000, run with commit 51fa626's buckets).
 *
 * @module
 */

/** The smallest power of two ≥ `n` and ≥ `min`, capped at `max` (which must be ≥ `n`). */
export function pow2Bucket(n: number, min = 1, max = Infinity): number {
  let b = 1;
  while (b < n || b < min) b *= 2;
  return Math.min(b, max);
}

/** The largest power of two ≤ n (n ≥ 1). */
export function prevPow2(n: number): number {
  return 2 ** Math.floor(Math.log2(Math.max(1, n)));
}
