import { numpy as np, valueAndGrad } from "@jax-js/jax";
import { assert, assertClose } from "../../assert.ts";
import { initEngine, int32Array, readFloat32 } from "../../../lib/local/engine.ts";
import { embedTokens } from "../../../lib/local/model/gpt.ts";
import { embedBackwardProgram } from "../../../lib/local/train/step.ts";
import { Rng } from "../../../lib/util/random.ts";

await initEngine();

Deno.test("embedBackwardProgram: the written-out gradient equals the lookup's autodiff, odd vocabulary included", async () => {
  const rng = new Rng(3);
  // 13 tokens (not a multiple of 4, like local/tools' 1441), a repeated token, context 16 > T.
  const [vocab, context, b, t, d] = [13, 16, 2, 8, 4];
  const ids = Array.from({ length: b * t }, (_, i) => (i === 5 ? 2 : rng.int(vocab)));
  ids[9] = 2;
  const randn = (shape: number[]) =>
    np.array(Float32Array.from({ length: shape.reduce((a, x) => a * x) }, () => rng.normal()))
      .reshape(shape);
  const wte = randn([vocab, d]), wpe = randn([context, d]), dx = randn([b, t, d]);
  const lookup = (p: Record<string, np.Array>, x: np.Array, g: np.Array) =>
    embedTokens(p, x).mul(g).sum();
  const [value, want] = valueAndGrad(lookup)(
    { "wte.weight": wte.ref, "wpe.weight": wpe.ref },
    int32Array(ids, [b, t]),
    dx.ref,
  );
  value.dispose();
  const zeros = { "wte.weight": np.zeros([vocab, d]), "wpe.weight": np.zeros([context, d]) };
  const got = embedBackwardProgram(zeros, int32Array(ids, [b, t]), dx, { vocab, context });
  for (const key of ["wte.weight", "wpe.weight"]) {
    assert.deepEqual(got[key].shape, want[key].shape, key);
    assertClose(await readFloat32(got[key]), await readFloat32(want[key]), 1e-5, key);
  }
  wte.dispose();
  wpe.dispose();
});
