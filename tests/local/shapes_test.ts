import { assert } from "../assert.ts";
import { halfOctaveBucket, pow2Bucket, prevPow2 } from "../../lib/local/shapes.ts";

Deno.test("pow2Bucket: powers of two with a floor and a cap", () => {
  assert.deepEqual([1, 2, 3, 5, 16, 17].map((n) => pow2Bucket(n)), [1, 2, 4, 8, 16, 32]);
  assert.equal(pow2Bucket(3, 16), 16);
  assert.equal(pow2Bucket(200, 16, 256), 256);
  assert.equal(pow2Bucket(200, 16, 220), 220);
  assert.deepEqual([1, 2, 3, 1023, 1024].map(prevPow2), [1, 2, 2, 512, 1024]);
});

Deno.test("halfOctaveBucket: powers of two and, above 64, their 1.5 multiples, with a floor and a cap", () => {
  assert.deepEqual([1, 33, 64, 65, 96, 97, 129, 193, 385].map((n) => halfOctaveBucket(n)), [
    1,
    64,
    64,
    96,
    96,
    128,
    192,
    256,
    512,
  ]);
  assert.equal(halfOctaveBucket(3, 8), 8);
  assert.equal(halfOctaveBucket(150, 8, 160), 160);
});
