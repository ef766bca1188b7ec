/**
 * Routes of training models: creating, describing and unloading them, forward(_backward),
 * optim_step, and saving and loading weights.
 *
 * @module
 */

import { type Context, Hono } from "hono";
import { UserInputError } from "../../errors.ts";
import type { LocalBackend } from "../../backend.ts";
import { assertFiniteNumbers } from "../../backend/wire.ts";
import { fingerprint } from "../../runtime/sequencer.ts";
import { handle, PROTOBUF, readRawBody, readTinkerBody } from "../http.ts";
import * as wire from "../../../protocol/mod.ts";

/** Training routes over `backend`. */
export function trainingRoutes(backend: LocalBackend): Hono {
  const api = new Hono();
  api.post("/create_model", async (c) => {
    const { body } = await readTinkerBody(c, wire.CreateModelRequestSchema, "create_model");
    return handle(c, backend.createModel(body));
  });
  api.post("/get_info", async (c) => {
    const { body } = await readTinkerBody(c, wire.GetInfoRequestSchema, "get_info");
    return c.json(backend.getInfo(body.model_id));
  });
  api.post("/unload_model", async (c) => {
    const { body } = await readTinkerBody(c, wire.UnloadModelRequestSchema, "unload_model");
    return handle(c, backend.unloadModel(body.model_id));
  });
  api.post("/forward_backward", async (c) => {
    const { req, print } = await readForwardBackward(c);
    return handle(c, backend.forwardBackward(req, req.forward_only, print), req.model_id);
  });
  api.post("/forward", async (c) => {
    const { body, print } = await readTinkerBody(c, wire.ForwardRequestSchema, "forward");
    const input = body.forward_input;
    return handle(
      c,
      backend.forwardBackward(
        {
          model_id: body.model_id,
          seq_id: body.seq_id,
          data: input.data,
          loss_fn: input.loss_fn,
          loss_fn_config: input.loss_fn_config,
        },
        true,
        print,
      ),
      body.model_id,
    );
  });
  api.post("/optim_step", async (c) => {
    const { body, print } = await readTinkerBody(c, wire.OptimStepRequestSchema, "optim_step");
    return handle(c, backend.optimStep(body, print), body.model_id);
  });
  api.post("/save_weights", async (c) => {
    const { body, print } = await readTinkerBody(c, wire.SaveWeightsRequestSchema, "save_weights");
    return handle(c, backend.saveWeights(body, print), body.model_id);
  });
  api.post("/save_weights_for_sampler", async (c) => {
    const { body, print } = await readTinkerBody(
      c,
      wire.SaveWeightsForSamplerRequestSchema,
      "save_weights_for_sampler",
    );
    return handle(c, backend.saveWeightsForSampler(body, print), body.model_id);
  });
  api.post("/load_weights", async (c) => {
    const { body, print } = await readTinkerBody(c, wire.LoadWeightsRequestSchema, "load_weights");
    return handle(c, backend.loadWeights(body, print), body.model_id ?? undefined);
  });
  api.post("/weights_info", async (c) => {
    const { body } = await readTinkerBody(c, wire.WeightsInfoRequestSchema, "weights_info");
    return c.json(await backend.weightsInfo(body.tinker_path));
  });
  return api;
}

/** forward_backward arrives as protobuf (SDK 0.25) or as JSON (SDK ≤ 0.24 and our JSON mode). */
async function readForwardBackward(
  c: Context,
): Promise<{ req: wire.ForwardBackwardProtoRequest; print: string }> {
  if ((c.req.header("content-type") ?? "").includes(PROTOBUF)) {
    const bytes = await readRawBody(c);
    let req: wire.ForwardBackwardProtoRequest;
    try {
      req = wire.decodeForwardBackwardRequest(bytes);
    } catch (e) {
      throw new UserInputError(`forward_backward: bad protobuf body (${(e as Error).message})`);
    }
    assertFiniteNumbers(req, "forward_backward");
    return { req, print: await fingerprint(bytes) };
  }
  const { body, print } = await readTinkerBody(
    c,
    wire.ForwardBackwardRequestSchema,
    "forward_backward",
  );
  const input = body.forward_backward_input;
  return {
    req: {
      model_id: body.model_id,
      seq_id: body.seq_id ?? 0,
      data: input.data,
      loss_fn: input.loss_fn,
      loss_fn_config: input.loss_fn_config ?? {},
      forward_only: false,
    },
    print,
  };
}
