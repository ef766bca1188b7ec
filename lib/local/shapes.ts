/**
 * Shape buckets shared by the learner and the sampler. jax-js compiles a jitted function once
 * per input shape, so every length is padded up to a bucket: a handful of buckets means a
 * handful of compiles over a whole run, whatever the requests' lengths.
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
 * Bucket of a sequence (or cache) length `n`: a power of two ≥ `min` up to 64, then four steps
 * per octave (80, 96, 112, 128, 160, …, 512, 640, 768, 896, 1024), capped at `max`. Above 64
 * tokens padding stays under 25 % where powers of two pad up to 100 %, and attention's cost
 * grows with the square of the padded length: a 600-token prompt prefills at 640, not 1024.
 */
export function lengthBucket(n: number, min = 1, max = Infinity): number {
  if (n <= 64) return pow2Bucket(n, min, max);
  const step = prevPow2(n - 1) / 4;
  return Math.min(Math.max(Math.ceil(n / step) * step, min), max);
}
