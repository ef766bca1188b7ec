/**
 * Shape buckets shared by the learner and the sampler: powers of two. jax-js compiles a jitted
 * function once per input shape, so every length is padded up to a bucket, and a handful of
 * buckets means a handful of compiles over a whole run.
 *
 * Why not finer buckets (less padding): jax-js's wasm allocator reuses a freed buffer only for
 * a request of the same size class and never coalesces (`heap.ts`), so every distinct size
 * stays allocated for the life of the process. With power-of-two rows and lengths every buffer
 * is a power of two times a model constant, so all shapes together take at most about twice
 * the largest one; four buckets per octave once took the heap from 1.1 to 3.3 GiB on the same
 * lengths (commit 51fa626, before programs were split by stage).
 *
 * The learner's sequence lengths are the exception: two buckets per octave above 64
 * ({@link halfOctaveBucket}). Its episodes come in lengths a power of two fits badly (the
 * README's first command's datums are 64, 94, 124 and 154 tokens: 154 padded to 256), so its
 * forward and backward ran on 1.62 tokens per real token, 1.28 with the 1.5× buckets (the
 * trained datums of a 55-step run of it replayed through `planMicroBatches`); the extra size
 * family at most doubles the learner's part of the heap, whose programs stay under
 * `PROGRAM_BYTES` each.
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

/**
 * The smallest of the powers of two and, above 64, their 1.5 multiples (96, 192, 384, …) that
 * is ≥ `n` and ≥ `min`, capped at `max` (which must be ≥ `n`).
 *
 * @example
 * [64, 65, 97, 129, 193].map((n) => halfOctaveBucket(n)); // [64, 96, 128, 192, 256]
 */
export function halfOctaveBucket(n: number, min = 1, max = Infinity): number {
  const p = pow2Bucket(n, min);
  const mid = (p / 4) * 3;
  return Math.min(p > 64 && mid >= n && mid >= min ? mid : p, max);
}
