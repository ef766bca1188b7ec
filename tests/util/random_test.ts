import { assert } from "../assert.ts";
import { Rng } from "../../lib/util/random.ts";

Deno.test("Rng: same seed, same stream; different seeds differ", () => {
  const a = new Rng(7), b = new Rng(7), c = new Rng(8);
  const xs = Array.from({ length: 5 }, () => a.nextU32());
  assert.deepEqual(xs, Array.from({ length: 5 }, () => b.nextU32()));
  assert.notDeepEqual(xs, Array.from({ length: 5 }, () => c.nextU32()));
});

Deno.test("Rng: state save and restore continues the stream exactly", () => {
  const a = new Rng(123);
  a.uniform();
  const restored = Rng.fromState(a.state());
  assert.deepEqual(
    Array.from({ length: 4 }, () => a.uniform()),
    Array.from({ length: 4 }, () => restored.uniform()),
  );
});

Deno.test("Rng: uniform in [0,1) and normal has roughly unit variance", () => {
  const r = new Rng(1);
  let sum = 0, sq = 0;
  const n = 20000;
  for (let i = 0; i < n; i++) {
    const u = r.uniform();
    assert.ok(u >= 0 && u < 1);
    const z = r.normal();
    sum += z;
    sq += z * z;
  }
  assert.ok(Math.abs(sum / n) < 0.05, `mean ${sum / n}`);
  assert.ok(Math.abs(sq / n - 1) < 0.05, `variance ${sq / n}`);
});
