import { assert, assertClose } from "../assert.ts";
import {
  decodeForwardBackwardOutput,
  decodeForwardBackwardRequest,
  decodeSampleResponse,
  encodeForwardBackwardOutput,
  encodeForwardBackwardRequest,
  encodeSampleResponse,
  type ForwardBackwardProtoRequest,
} from "../../lib/protocol/mod.ts";

/** Hand-built protobuf bytes (varint tags), independent of protobufjs, for golden tests. */
function field(num: number, wire: number, payload: number[]): number[] {
  return [...varint((num << 3) | wire), ...payload];
}
function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 127) {
    out.push((n & 127) | 128);
    n >>>= 7;
  }
  return [...out, n];
}
function lengthDelimited(num: number, bytes: number[]): number[] {
  return field(num, 2, [...varint(bytes.length), ...bytes]);
}
const str = (s: string) => [...new TextEncoder().encode(s)];
const le = (a: Int32Array | Float32Array | BigInt64Array) => [...new Uint8Array(a.buffer)];

Deno.test("proto: decodes the SDK 0.25 forward_backward request captured in the reference", () => {
  // seq_id 1, loss_fn cross_entropy, tokens [1,2,3,4] int32 LE,
  // target_tokens int64 shape [4], weights float32 shape [4].
  const tensor = (bytes: number[], dtype: number) => [
    ...lengthDelimited(1, bytes),
    ...field(3, 0, [dtype]),
    ...lengthDelimited(4, [4]), // packed repeated int64 shape
  ];
  const mapEntry = (key: string, value: number[]) =>
    lengthDelimited(2, [...lengthDelimited(1, str(key)), ...lengthDelimited(2, value)]);
  const chunk = lengthDelimited(
    1,
    lengthDelimited(1, lengthDelimited(1, le(Int32Array.from([1, 2, 3, 4])))),
  );
  const datum = lengthDelimited(3, [
    ...chunk,
    ...mapEntry("target_tokens", tensor(le(BigInt64Array.from([2n, 3n, 4n, 5n])), 2)),
    ...mapEntry("weights", tensor(le(Float32Array.from([1, 1, 0.5, -1])), 1)),
  ]);
  const bytes = new Uint8Array([
    ...lengthDelimited(1, str("m:train:0")),
    ...field(2, 0, [1]),
    ...datum,
    ...lengthDelimited(4, str("cross_entropy")),
  ]);
  const req = decodeForwardBackwardRequest(bytes);
  assert.equal(req.model_id, "m:train:0");
  assert.equal(req.seq_id, 1);
  assert.equal(req.loss_fn, "cross_entropy");
  assert.equal(req.forward_only, false);
  assert.deepEqual(req.data[0].model_input.chunks, [{
    type: "encoded_text",
    tokens: [1, 2, 3, 4],
  }]);
  assert.deepEqual(req.data[0].loss_fn_inputs.target_tokens, {
    data: [2, 3, 4, 5],
    dtype: "int64",
    shape: [4],
  });
  assert.deepEqual(req.data[0].loss_fn_inputs.weights.data, [1, 1, 0.5, -1]);
});

Deno.test("proto: forward_backward request round-trips, including sparse CSR and config", () => {
  const req: ForwardBackwardProtoRequest = {
    model_id: "m",
    seq_id: 7,
    loss_fn: "ppo",
    loss_fn_config: { clip_low_threshold: 0.8, clip_high_threshold: 1.2 },
    forward_only: true,
    data: [{
      model_input: { chunks: [{ type: "encoded_text", tokens: [5, 6, 7] }] },
      loss_fn_inputs: {
        target_tokens: { data: [6, 7, 8], dtype: "int64", shape: [3] },
        advantages: { data: [0.5, -0.25, 0], dtype: "float32", shape: [3] },
        weights: {
          data: [1, 2],
          dtype: "float32",
          shape: [3, 2],
          sparse_crow_indices: [0, 1, 1, 2],
          sparse_col_indices: [0, 1],
        },
      },
    }],
  };
  const back = decodeForwardBackwardRequest(encodeForwardBackwardRequest(req));
  assert.deepEqual(back, req);
});

Deno.test("proto: forward_backward output round-trips 1-D and 2-D ragged datums", () => {
  const out = {
    loss_fn_output_type: "ArrayRecord",
    metrics: { "loss:sum": 3.5, "clip_fraction:mean": 0.25 },
    loss_fn_outputs: [
      { logprobs: { data: [-1, -2, -3], dtype: "float32" as const, shape: [3] } },
      { logprobs: { data: [-0.5], dtype: "float32" as const, shape: [1] } },
    ],
  };
  const back = decodeForwardBackwardOutput(encodeForwardBackwardOutput(out));
  assert.deepEqual(back, out);
  const twoD = {
    ...out,
    loss_fn_outputs: [
      { logprobs: { data: [1, 2, 3, 4], dtype: "float32" as const, shape: [2, 2] } },
      { logprobs: { data: [5, 6], dtype: "float32" as const, shape: [1, 2] } },
    ],
  };
  assert.deepEqual(decodeForwardBackwardOutput(encodeForwardBackwardOutput(twoD)), twoD);
});

Deno.test("proto: sample response keeps null prompt logprobs and ragged top-k rows", () => {
  const res = {
    type: "sample" as const,
    prompt_cache_hit_tokens: 0,
    sequences: [
      { stop_reason: "stop" as const, tokens: [1, 2], logprobs: [-0.5, -0.25] },
      { stop_reason: "length" as const, tokens: [3], logprobs: [-1] },
    ],
    prompt_logprobs: [null, -1.5, -2.5],
    topk_prompt_logprobs: [null, [[4, -0.5], [9, -1.25]] as [number, number][], [[7, -0.75]] as [
      number,
      number,
    ][]],
  };
  const back = decodeSampleResponse(encodeSampleResponse(res));
  assert.deepEqual(back.sequences, res.sequences);
  assert.deepEqual(back.prompt_logprobs, res.prompt_logprobs);
  assert.deepEqual(back.topk_prompt_logprobs, res.topk_prompt_logprobs);
  const bare = decodeSampleResponse(
    encodeSampleResponse({ ...res, prompt_logprobs: null, topk_prompt_logprobs: null }),
  );
  assert.equal(bare.prompt_logprobs, undefined);
  assert.equal(bare.topk_prompt_logprobs, undefined);
});

Deno.test("proto: bad bytes are an error, not a crash", () => {
  assert.throws(() => decodeForwardBackwardRequest(new Uint8Array([0x0a, 0xff, 0xff, 0xff])));
  // A tokens field whose length is not a multiple of 4 bytes.
  const bad = new Uint8Array([
    ...lengthDelimited(3, lengthDelimited(1, lengthDelimited(1, lengthDelimited(1, [1, 2, 3])))),
  ]);
  assert.throws(() => decodeForwardBackwardRequest(bad), /whole number of 4-byte values/);
  assertClose([1], [1]);
});
