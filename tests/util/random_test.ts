import { assert } from "../assert.ts";
import {
  deriveSeed,
  HELD_OUT_ENV_SEEDS,
  heldOutEnvSeeds,
  isHeldOutEnvSeed,
  Rng,
} from "../../lib/util/random.ts";

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

Deno.test("deriveSeed: training seeds never enter the held-out seed space", () => {
  // 10⁶ derived seeds over bases, steps, groups and episodes: an unguarded 31-bit hash would put
  // about 47 of them among the 100,000 held-out seeds.
  let n = 0;
  for (const base of [0, 1, 42, -7, 2 ** 31 - 1]) {
    for (let step = 0; step < 2000; step++) {
      for (let group = -1; group < 99; group++) {
        const seed = deriveSeed(base, step, group);
        assert.ok(!isHeldOutEnvSeed(seed), `deriveSeed(${base}, ${step}, ${group}) = ${seed}`);
        assert.ok(seed >= 0 && seed < 2 ** 31 - 1024);
        n++;
      }
    }
  }
  assert.equal(n, 1_000_000);
  for (let i = 0; i < 10_000; i++) assert.ok(!isHeldOutEnvSeed(deriveSeed(3, i, 7, 2, 0)));
});

Deno.test("deriveSeed: held-out env seeds are one block, and an evaluation cannot outgrow it", () => {
  const seeds = heldOutEnvSeeds(HELD_OUT_ENV_SEEDS.count);
  assert.equal(seeds[0], HELD_OUT_ENV_SEEDS.first);
  assert.ok(seeds.every(isHeldOutEnvSeed));
  assert.ok(!isHeldOutEnvSeed(HELD_OUT_ENV_SEEDS.first - 1));
  assert.ok(!isHeldOutEnvSeed(HELD_OUT_ENV_SEEDS.first + HELD_OUT_ENV_SEEDS.count));
  assert.throws(() => heldOutEnvSeeds(HELD_OUT_ENV_SEEDS.count + 1), RangeError);
  // A second set from another index is disjoint from the first and still held out.
  const validation = heldOutEnvSeeds(256, 256);
  assert.equal(validation[0], HELD_OUT_ENV_SEEDS.first + 256);
  assert.ok(!validation.some((s) => heldOutEnvSeeds(256).includes(s)));
  assert.throws(() => heldOutEnvSeeds(2, HELD_OUT_ENV_SEEDS.count - 1), RangeError);
});
