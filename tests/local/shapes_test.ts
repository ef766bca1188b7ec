import { assert } from "../assert.ts";
import { pow2Bucket, prevPow2 } from "../../lib/local/shapes.ts";

Deno.test("pow2Bucket: powers of two with a floor and a cap", () => {
  assert.deepEqual([1, 2, 3, 5, 16, 17].map((n) => pow2Bucket(n)), [1, 2, 4, 8, 16, 32]);
  assert.equal(pow2Bucket(3, 16), 16);
  assert.equal(pow2Bucket(200, 16, 256), 256);
  assert.equal(pow2Bucket(200, 16, 220), 220);
  assert.deepEqual([1, 2, 3, 1023, 1024].map(prevPow2), [1, 2, 2, 512, 1024]);
});
