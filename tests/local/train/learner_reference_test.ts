/**
 * The learner against the jax-js learner it replaced: on every case of `reference_cases.ts`
 * (every loss, top-K cross-entropy, LoRA with folded and unfolded adapters, full training;
 * learned, rotary and windowed models) the forward log-probs, the metrics and the step's
 * weight deltas equal the fixture's, written by the jax-js learner.
 *
 * Tolerance: log-probs within 1e-4 (absolute, or relative above 1), metrics within 1e-4
 * relative, and the step's deltas (−g/(|g| + 1), so the gradient) within 2e-4 of the largest.
 * Every case but one agrees within 4e-5; the rotary LoRA case (a strong adapter, so sharp
 * attention) moves by 1.45e-4 with where `1/√hd` is applied alone: `train_attention.ts` scales
 * `q`, the jax-js learner scaled the scores, and scaling the scores here gave 3.8e-5.
 */

import { assert, assertClose } from "../../assert.ts";
import { CASES, decodeFloats, type ReferenceResult, runCase } from "./reference_cases.ts";

const FIXTURE: ReferenceResult[] = JSON.parse(
  await Deno.readTextFile(new URL("./fixtures/learner_reference.json", import.meta.url)),
);

for (const c of CASES) {
  Deno.test(`learner = the jax-js learner's reference: ${c.name}`, async () => {
    const want = FIXTURE.find((r) => r.name === c.name);
    assert.ok(want, `the fixture has ${c.name}`);
    const got = await runCase(c);
    assertClose(got.logprobs, decodeFloats(want.logprobs), 1e-4, "logprobs");
    for (const [k, v] of Object.entries(want.metrics)) {
      assertClose([got.metrics[k]], [v], 1e-4, k);
    }
    const delta = decodeFloats(want.delta);
    const scale = Math.max(...delta.map(Math.abs));
    assert.ok(scale > 1e-4, "the step moved the weights");
    const worst = got.delta.reduce((m, x, i) => Math.max(m, Math.abs(x - delta[i])), 0) / scale;
    console.log(`${c.name}: worst delta gap ${worst.toExponential(2)} of the largest`);
    assertClose(got.delta.map((x) => x / scale), delta.map((x) => x / scale), 2e-4, "delta");
  });
}
