/**
 * Shape buckets of the sampler: powers of two. jax-js compiles a jitted
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
