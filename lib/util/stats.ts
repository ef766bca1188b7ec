/**
 * Summary statistics over plain number arrays, for metrics and advantages.
 *
 * @module
 */

/** The sum of plain or typed array values (a tensor's `data` may be either). */
export function sum(xs: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i];
  return s;
}

/** The mean, or 0 for an empty array (a metric over no items reads as 0, not NaN). */
export function mean(xs: readonly number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

/**
 * The sample standard deviation (divides by n − 1, as Python's `statistics.stdev`, which
 * OpenReward's metrics use), 0 for < 2 items.
 */
export function sampleStd(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1));
}

/** The population standard deviation (divides by n, as numpy's default), 0 for < 2 items. */
export function std(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / xs.length);
}
