import { assert } from "../assert.ts";
import { lengthBucket, pow2Bucket, prevPow2 } from "../../lib/local/shapes.ts";

Deno.test("pow2Bucket: powers of two with a floor and a cap", () => {
  assert.deepEqual([1, 2, 3, 5, 16, 17].map((n) => pow2Bucket(n)), [1, 2, 4, 8, 16, 32]);
  assert.equal(pow2Bucket(3, 16), 16);
  assert.equal(pow2Bucket(200, 16, 256), 256);
  assert.equal(pow2Bucket(200, 16, 220), 220);
  assert.deepEqual([1, 2, 3, 1023, 1024].map(prevPow2), [1, 2, 2, 512, 1024]);
});

Deno.test("lengthBucket: powers of two to 64, then four steps per octave, padding < 25 %", () => {
  const lengths = [3, 64, 65, 80, 81, 128, 129, 500, 513, 600, 641, 1000, 1024];
  assert.deepEqual(lengths.map((n) => lengthBucket(n, 16, 1024)), [
    16,
    64,
    80,
    80,
    96,
    128,
    160,
    512,
    640,
    640,
    768,
    1024,
    1024,
  ]);
  assert.equal(lengthBucket(700, 16, 700), 700, "capped");
  assert.equal(lengthBucket(70, 128), 128, "floored");
  for (let n = 65; n <= 4096; n++) {
    const b = lengthBucket(n);
    assert.ok(b >= n && b < 1.25 * n, `bucket ${b} of ${n} pads less than 25 %`);
  }
});
