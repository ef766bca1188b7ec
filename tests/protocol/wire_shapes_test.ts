import { assert } from "../assert.ts";
import { jsonShape, routeTemplate, shapeDifferences } from "../../lib/protocol/mod.ts";

Deno.test("wire shapes: keys and kinds of values, tags kept, arrays merged, routes templated", () => {
  assert.deepEqual(
    jsonShape({
      type: "optim_step",
      seq_id: 2,
      adam_params: { learning_rate: 1e-3 },
      data: [{ a: 1 }, { b: "x" }],
      path: null,
    }),
    {
      adam_params: { learning_rate: "number" },
      data: [{ a: "number", b: "string" }],
      path: "null",
      seq_id: "number",
      type: "optim_step",
    },
  );
  assert.equal(
    routeTemplate("/api/v1/training_runs/abc:train:0/checkpoints/sampler_weights/s-1/ttl"),
    "/api/v1/training_runs/{run}/checkpoints/{kind}/{name}/ttl",
  );
  const sdk = jsonShape({ adam_params: { beta1: 0.9, eps: 1e-12 }, overwrite: false });
  assert.deepEqual(
    shapeDifferences(jsonShape({ adam_params: { beta1: 0.9, eps: 1e-12 }, overwrite: true }), sdk),
    [],
  );
  assert.deepEqual(shapeDifferences(jsonShape({ adam_params: { beta1: 0.9 }, extra: 1 }), sdk), [
    'adam_params.eps missing (the SDK sends "number")',
    "extra sent, but the SDK does not send it",
    'overwrite missing (the SDK sends "boolean")',
  ]);
});
