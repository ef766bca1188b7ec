/**
 * Benchmarks of the Tinker client: wire encodings (protobuf vs JSON for a large
 * forward_backward) and the cost of awaiting each call versus pipelining under latency.
 *
 * @module
 */

import {
  decodeForwardBackwardRequest,
  encodeForwardBackwardRequest,
  type ForwardBackwardProtoRequest,
} from "../lib/protocol/mod.ts";
import { datum, ServiceClient } from "../lib/tinker/mod.ts";
import { startLocalServer } from "../lib/local/server/mod.ts";
import { median } from "./local_engine.ts";

/** Encode/decode times and sizes of one forward_backward of `datums` × `tokens`. */
export function benchEncodings(datums = 1000, tokens = 2000, reps = 3) {
  const data = Array.from({ length: datums }, (_, i) => {
    const toks = Array.from({ length: tokens + 1 }, (_, t) => (i * 7 + t * 13) % 151_000);
    return datum(toks.slice(0, -1), {
      target_tokens: toks.slice(1),
      weights: toks.slice(1).map(() => 1),
    });
  });
  const req: ForwardBackwardProtoRequest = {
    model_id: "m",
    seq_id: 1,
    data,
    loss_fn: "cross_entropy",
    loss_fn_config: {},
    forward_only: false,
  };
  const time = (f: () => unknown) => {
    const ms: number[] = [];
    for (let r = 0; r < reps; r++) {
      const t0 = performance.now();
      f();
      ms.push(performance.now() - t0);
    }
    return median(ms);
  };
  const proto = encodeForwardBackwardRequest(req);
  const json = JSON.stringify({
    forward_backward_input: { data, loss_fn: "cross_entropy" },
    model_id: "m",
    seq_id: 1,
  });
  return {
    sizes: { datums, tokens },
    protobuf: {
      bytes: proto.length,
      encode_ms: time(() => encodeForwardBackwardRequest(req)),
      decode_ms: time(() => decodeForwardBackwardRequest(proto)),
    },
    json: {
      bytes: new TextEncoder().encode(json).length,
      encode_ms: time(() =>
        JSON.stringify({ forward_backward_input: { data }, model_id: "m", seq_id: 1 })
      ),
      decode_ms: time(() => JSON.parse(json)),
    },
  };
}

/**
 * Time per training step (forward_backward + optim_step on a tiny batch of `local/tiny`) with
 * `latencyMs` added to every request, awaiting each call versus submitting both first.
 */
export async function benchPipelining(latencyMs = 100, steps = 6) {
  const dataDir = await Deno.makeTempDir({ prefix: "tb-bench-" });
  const server = await startLocalServer({ dataDir, faults: { latencyMs: [latencyMs, latencyMs] } });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  try {
    const training = await service.createLoraTrainingClient({ baseModel: "local/tiny", rank: 4 });
    const batch = [datum([1, 2, 3, 4], { target_tokens: [2, 3, 4, 5], weights: [1, 1, 1, 1] })];
    const timeSteps = async (pipelined: boolean) => {
      const ms: number[] = [];
      for (let i = 0; i < steps; i++) {
        const t0 = performance.now();
        if (pipelined) {
          const fb = training.forwardBackward(batch, "cross_entropy");
          const op = training.optimStep({ learning_rate: 1e-4 });
          await fb;
          await op;
        } else {
          await training.forwardBackward(batch, "cross_entropy");
          await training.optimStep({ learning_rate: 1e-4 });
        }
        ms.push(performance.now() - t0);
      }
      return median(ms.slice(1));
    };
    await timeSteps(false); // warm-up: jit compiles
    const awaited = await timeSteps(false);
    const pipelined = await timeSteps(true);
    return {
      latency_ms: latencyMs,
      awaited_ms: awaited,
      pipelined_ms: pipelined,
      ratio: pipelined / awaited,
    };
  } finally {
    service.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}
