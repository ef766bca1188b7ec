import { assert, assertClose } from "../assert.ts";
import {
  decodeForwardBackwardOutput,
  decodeForwardBackwardRequest,
  decodeSampleResponse,
  encodeForwardBackwardOutput,
  encodeForwardBackwardRequest,
  encodeSampleResponse,
  type ForwardBackwardOutput,
  ForwardBackwardOutputSchema,
  type ForwardBackwardProtoRequest,
  type TensorData,
} from "../../lib/protocol/mod.ts";
import { protoType } from "../../lib/protocol/proto_schema.ts";

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

/**
 * The SDK 0.25 forward_backward request captured in the reference: seq_id 1, loss_fn
 * cross_entropy, tokens [1,2,3,4] int32 LE, target_tokens int64 shape [4], weights float32
 * shape [4].
 */
function capturedRequest(): Uint8Array {
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
  return new Uint8Array([
    ...lengthDelimited(1, str("m:train:0")),
    ...field(2, 0, [1]),
    ...datum,
    ...lengthDelimited(4, str("cross_entropy")),
  ]);
}

Deno.test("proto: decodes the SDK 0.25 forward_backward request captured in the reference", () => {
  const req = decodeForwardBackwardRequest(capturedRequest());
  assert.equal(req.model_id, "m:train:0");
  assert.equal(req.seq_id, 1);
  assert.equal(req.loss_fn, "cross_entropy");
  assert.equal(req.forward_only, false);
  assert.deepEqual(req.data[0].model_input.chunks, [{
    type: "encoded_text",
    tokens: [1, 2, 3, 4],
  }]);
  assert.deepEqual(req.data[0].loss_fn_inputs.target_tokens, {
    data: Int32Array.from([2, 3, 4, 5]),
    dtype: "int64",
    shape: [4],
  });
  assert.deepEqual(req.data[0].loss_fn_inputs.weights.data, Float32Array.from([1, 1, 0.5, -1]));
});

Deno.test("proto: encodes that request byte for byte as the SDK did, from plain or typed arrays", () => {
  const request = (typed: boolean): ForwardBackwardProtoRequest => ({
    model_id: "m:train:0",
    seq_id: 1,
    loss_fn: "cross_entropy",
    loss_fn_config: {},
    forward_only: false,
    data: [{
      model_input: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3, 4] }] },
      loss_fn_inputs: {
        target_tokens: {
          data: typed ? Int32Array.from([2, 3, 4, 5]) : [2, 3, 4, 5],
          dtype: "int64",
          shape: [4],
        },
        weights: {
          data: typed ? Float32Array.from([1, 1, 0.5, -1]) : [1, 1, 0.5, -1],
          dtype: "float32",
          shape: [4],
        },
      },
    }],
  });
  assert.deepEqual(encodeForwardBackwardRequest(request(false)), capturedRequest());
  assert.deepEqual(encodeForwardBackwardRequest(request(true)), capturedRequest());
  // Float64Array values and an Int32Array float32 tensor are converted while written.
  const mixed = request(false);
  mixed.data[0].loss_fn_inputs.target_tokens.data = Float64Array.from([2, 3, 4, 5]);
  mixed.data[0].loss_fn_inputs.weights.data = Float64Array.from([1, 1, 0.5, -1]);
  assert.deepEqual(encodeForwardBackwardRequest(mixed), capturedRequest());
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
  assert.deepEqual(back, typedValues(req));
});

/** The request as the decoder hands it back: tensor values in typed arrays. */
function typedValues(req: ForwardBackwardProtoRequest): ForwardBackwardProtoRequest {
  return {
    ...req,
    data: req.data.map((d) => ({
      ...d,
      loss_fn_inputs: Object.fromEntries(
        Object.entries(d.loss_fn_inputs).map(([k, t]) => [k, {
          ...t,
          data: t.dtype === "int64" ? Int32Array.from(t.data) : Float32Array.from(t.data),
        }]),
      ),
    })),
  };
}

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
  assert.deepEqual(back, typedOutput(out));
  const twoD = {
    ...out,
    loss_fn_outputs: [
      { logprobs: { data: [1, 2, 3, 4], dtype: "float32" as const, shape: [2, 2] } },
      { logprobs: { data: [5, 6], dtype: "float32" as const, shape: [1, 2] } },
    ],
  };
  const back2 = decodeForwardBackwardOutput(encodeForwardBackwardOutput(twoD));
  assert.deepEqual(back2, typedOutput(twoD));
  // One batched field, one copy: every datum's tensor is a view of the same buffer.
  const [a, b] = back2.loss_fn_outputs.map((o) => o.logprobs.data as Float32Array);
  assert.equal(a.buffer, b.buffer);
});

/** The output as the decoder hands it back: float32 values in Float32Arrays. */
function typedOutput(out: ForwardBackwardOutput): ForwardBackwardOutput {
  return {
    ...out,
    loss_fn_outputs: out.loss_fn_outputs.map((o) =>
      Object.fromEntries(
        Object.entries(o).map(([k, t]) => [k, {
          ...t,
          data: t.dtype === "int64" ? Int32Array.from(t.data) : Float32Array.from(t.data),
        }]),
      )
    ),
  };
}

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

const oneDatum = (target: TensorData): ForwardBackwardProtoRequest => ({
  model_id: "m",
  seq_id: 3,
  loss_fn: "cross_entropy",
  loss_fn_config: {},
  forward_only: false,
  data: [{
    model_input: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3, 4] }] },
    loss_fn_inputs: { target_tokens: target },
  }],
});
const targetsBack = (data: TensorData["data"]) =>
  decodeForwardBackwardRequest(
    encodeForwardBackwardRequest(oneDatum({ data, dtype: "int64", shape: [data.length] })),
  ).data[0].loss_fn_inputs.target_tokens.data;

Deno.test("proto: int64 values are Int32Array when they fit, Float64Array to 2^53, else an error", () => {
  const small = [2 ** 31 - 1, -(2 ** 31), 0, -1];
  assert.deepEqual(targetsBack(small), Int32Array.from(small));
  assert.deepEqual(targetsBack(Int32Array.from(small)), Int32Array.from(small));
  const big = [2 ** 31, -(2 ** 31) - 1, 2 ** 53 - 1, -(2 ** 53)];
  assert.deepEqual(targetsBack(big), Float64Array.from(big));
  assert.deepEqual(targetsBack(Float64Array.from(big)), Float64Array.from(big));
  // Non-integers truncate toward zero, as the SDK's numpy cast does.
  assert.deepEqual(targetsBack([1.9, -1.9, 2.5, -0.5]), Int32Array.from([1, -1, 2, 0]));
  // 2^60 is a valid int64 on the wire but no JavaScript number holds it exactly.
  assert.throws(() => targetsBack([2 ** 60, 1, 2, 3]), /target_tokens\[0\].*beyond ±2\^53/);
  for (const bad of [NaN, Infinity, 2 ** 63]) {
    assert.throws(() => targetsBack([1, bad, 2, 3]), /target_tokens\[1\] = .* is not an int64/);
  }
});

Deno.test("proto: empty tensors, empty token chunks and negative seq ids round-trip", () => {
  const req = oneDatum({ data: new Float32Array(0), dtype: "float32", shape: [0] });
  req.seq_id = -2;
  req.data[0].model_input.chunks.push({ type: "encoded_text", tokens: [] });
  const back = decodeForwardBackwardRequest(encodeForwardBackwardRequest(req));
  assert.equal(back.seq_id, -2);
  assert.deepEqual(back.data[0].model_input.chunks[1], { type: "encoded_text", tokens: [] });
  assert.deepEqual(
    back.data[0].loss_fn_inputs.target_tokens,
    req.data[0].loss_fn_inputs.target_tokens,
  );
  assert.throws(
    () => encodeForwardBackwardRequest({ ...req, seq_id: 2 ** 31 }),
    /seq_id 2147483648 is not an int32/,
  );
});

Deno.test("proto: outputs whose trailing shape or dtype changes split into ArrayRecords", () => {
  const out: ForwardBackwardOutput = {
    loss_fn_output_type: "ArrayRecord",
    metrics: { "loss:sum": -2 },
    loss_fn_outputs: [
      {
        logprobs: { data: Float32Array.from([1, 2, 3, 4]), dtype: "float32", shape: [2, 2] },
        ids: { data: Int32Array.from([7, 8]), dtype: "int64", shape: [2] },
      },
      {
        logprobs: { data: [5, 6, 7], dtype: "float32", shape: [1, 3] },
        ids: { data: [2 ** 40], dtype: "int64", shape: [1] },
      },
      {
        logprobs: { data: [], dtype: "float32", shape: [0, 3] },
        ids: { data: [], dtype: "int64", shape: [0] },
      },
    ],
  };
  const bytes = encodeForwardBackwardOutput(out);
  const records = protoType("ForwardBackwardOutput").toObject(
    protoType("ForwardBackwardOutput").decode(bytes),
    { longs: Number },
  ).loss_fn_outputs as { num_datums: number }[];
  assert.deepEqual(records.map((r) => r.num_datums), [1, 2]);
  const back = decodeForwardBackwardOutput(bytes);
  assert.deepEqual(back.loss_fn_outputs, [
    {
      logprobs: { data: Float32Array.from([1, 2, 3, 4]), dtype: "float32", shape: [2, 2] },
      ids: { data: Int32Array.from([7, 8]), dtype: "int64", shape: [2] },
    },
    {
      logprobs: { data: Float32Array.from([5, 6, 7]), dtype: "float32", shape: [1, 3] },
      ids: { data: Float64Array.from([2 ** 40]), dtype: "int64", shape: [1] },
    },
    {
      logprobs: { data: new Float32Array(0), dtype: "float32", shape: [0, 3] },
      ids: { data: new Float64Array(0), dtype: "int64", shape: [0] },
    },
  ]);
  assert.throws(
    () =>
      encodeForwardBackwardOutput({
        ...out,
        loss_fn_outputs: [{ logprobs: { data: [1, 2, 3], dtype: "float32", shape: [2, 2] } }],
      }),
    /loss_fn_outputs\[0\]\.logprobs: 3 values for shape \[2,2\]/,
  );
});

Deno.test("proto: decoded outputs hold the values the JSON path gives", () => {
  const out: ForwardBackwardOutput = {
    loss_fn_output_type: "ArrayRecord",
    metrics: { "loss:sum": 12.25 },
    loss_fn_outputs: Array.from({ length: 5 }, (_, i) => ({
      logprobs: {
        data: Float32Array.from({ length: 3 + i }, (_, t) => -Math.log(2 + i * t)),
        dtype: "float32" as const,
        shape: [3 + i],
      },
    })),
  };
  const typedAsLists = (_k: string, v: unknown) => v instanceof Float32Array ? Array.from(v) : v;
  const viaJson = ForwardBackwardOutputSchema.parse(JSON.parse(JSON.stringify(out, typedAsLists)));
  const viaProto = decodeForwardBackwardOutput(encodeForwardBackwardOutput(out));
  assert.deepEqual(viaProto.metrics, viaJson.metrics);
  viaProto.loss_fn_outputs.forEach((o, i) => {
    assert.ok(o.logprobs.data instanceof Float32Array);
    assert.deepEqual(Array.from(o.logprobs.data), viaJson.loss_fn_outputs[i].logprobs.data);
    assert.deepEqual(o.logprobs.shape, viaJson.loss_fn_outputs[i].logprobs.shape);
  });
});

Deno.test("proto: batched offsets that do not match the data are an error naming the datum", () => {
  const type = protoType("ForwardBackwardOutput");
  const offsets = (xs: bigint[]) => new Uint8Array(BigInt64Array.from(xs).buffer);
  const msg = (o: Uint8Array) =>
    type.encode(type.fromObject({
      loss_fn_output_type: "ArrayRecord",
      loss_fn_outputs: [{
        type_tag: "ArrayRecord",
        num_datums: 2,
        fields: {
          logprobs: {
            data: new Uint8Array(new Float32Array([1, 2, 3]).buffer),
            offsets: o,
            dtype: 1,
          },
        },
      }],
    })).finish();
  assert.equal(decodeForwardBackwardOutput(msg(offsets([0n, 4n, 12n]))).loss_fn_outputs.length, 2);
  assert.throws(
    () => decodeForwardBackwardOutput(msg(offsets([0n, 4n, 16n]))),
    /loss_fn_outputs\[1\]\.logprobs: bad byte offsets 4\.\.16 for 12 bytes/,
  );
  assert.throws(
    () => decodeForwardBackwardOutput(msg(offsets([0n, 12n]))),
    /2 offsets for 2 datums/,
  );
});
