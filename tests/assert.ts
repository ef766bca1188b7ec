/**
 * Assertions for tests, on `node:assert` (JSR's @std/assert is unreachable here), plus a
 * closeness check for float arrays.
 *
 * @module
 */

import assert from "node:assert/strict";

export { assert };

/** Asserts that two numeric arrays have the same length and agree within `tol` elementwise. */
export function assertClose(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  tol = 1e-6,
  what = "values",
): void {
  assert.equal(
    actual.length,
    expected.length,
    `${what}: length ${actual.length} != ${expected.length}`,
  );
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i], e = expected[i];
    if (!(Math.abs(a - e) <= tol * Math.max(1, Math.abs(e)))) {
      assert.fail(`${what}[${i}]: ${a} != ${e} (tol ${tol})`);
    }
  }
}
