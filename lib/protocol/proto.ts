/**
 * The protobuf form of a forward_backward request on Tinker's wire (SDK 0.25); its result is
 * in `proto_output.ts`, sample results in `proto_sample.ts`. Converts between protobuf bytes
 * and the types of `types.ts`, so the rest of the code sees one shape whatever the encoding.
 *
 * Arrays travel as raw little-endian buffers (int32 tokens, int64/float32 tensors). Both
 * directions keep them typed: the encoders write plain or typed arrays straight into the
 * message (typed arrays of the wire's width byte for byte), and the decoders hand out typed
 * arrays (see `decodeValues`).
 *
 * @module
 */

import { decodeValues, DTYPE, int32List, int64s, toList } from "./proto_arrays.ts";
import { protoType } from "./proto_schema.ts";
import { delimitedSize, ProtoWriter, varintFieldSize, varintSize, WIRE } from "./proto_writer.ts";
import type { Datum, TensorData } from "./types.ts";

const ForwardBackwardRequestType = protoType("ForwardBackwardRequest");

// Shapes of decoded messages (protobufjs `toObject` with longs as numbers).
interface ProtoTensor {
  dense?: Uint8Array;
  sparse_csr?: { values: Uint8Array; crow_indices: Uint8Array; col_indices: Uint8Array };
  dtype: number;
  shape?: number[];
}
interface ProtoForwardBackwardRequest {
  model_id: string;
  seq_id: number;
  loss_fn: string;
  loss_fn_config?: Record<string, number>;
  forward_only: boolean;
  data?: Array<{
    model_input?: Array<{ encoded_text?: { tokens: Uint8Array } }>;
    loss_fn_inputs?: Record<string, ProtoTensor>;
  }>;
}

/** A decoded protobuf forward_backward request (the proto form has `forward_only` inline). */
export interface ForwardBackwardProtoRequest {
  model_id: string;
  seq_id: number;
  data: Datum[];
  loss_fn: string;
  loss_fn_config: Record<string, number>;
  forward_only: boolean;
}

/** UTF-8 bytes of the strings of one message; map keys repeat in every datum. */
class Utf8 {
  readonly #cache = new Map<string, Uint8Array>();
  readonly #encoder = new TextEncoder();
  get(s: string): Uint8Array {
    let b = this.#cache.get(s);
    if (!b) this.#cache.set(s, b = this.#encoder.encode(s));
    return b;
  }
}

// ---- forward_backward request ----

/**
 * Encodes a forward_backward request as the SDK 0.25 does. Token ids and tensor values may be
 * plain or typed arrays; an Int32Array of tokens and a Float32Array of float32 values are
 * copied as they are, everything else is converted while it is written.
 */
export function encodeForwardBackwardRequest(req: ForwardBackwardProtoRequest): Uint8Array {
  if (!Number.isInteger(req.seq_id) || Math.abs(req.seq_id) >= 2 ** 31) {
    throw new Error(`forward_backward: seq_id ${req.seq_id} is not an int32`);
  }
  const utf8 = new Utf8();
  const datums = req.data.map((d, i) => planDatum(d, i, utf8));
  const modelId = utf8.get(req.model_id), lossFn = utf8.get(req.loss_fn);
  const config = Object.entries(req.loss_fn_config).map(([k, v]) => ({ key: utf8.get(k), v }));
  const configSize = (key: Uint8Array) => delimitedSize(1, key.length) + 1 + 8;
  let size = 0;
  if (modelId.length) size += delimitedSize(1, modelId.length);
  if (req.seq_id) size += varintFieldSize(2, req.seq_id);
  for (const d of datums) size += delimitedSize(3, d.size);
  if (lossFn.length) size += delimitedSize(4, lossFn.length);
  for (const c of config) size += delimitedSize(5, configSize(c.key));
  if (req.forward_only) size += 2;

  const w = new ProtoWriter(size);
  if (modelId.length) writeBytesField(w, 1, modelId);
  if (req.seq_id) {
    w.tag(2, WIRE.VARINT);
    w.varint(req.seq_id);
  }
  for (const d of datums) writeDatum(w, d);
  if (lossFn.length) writeBytesField(w, 4, lossFn);
  for (const c of config) {
    w.delimited(5, configSize(c.key));
    writeBytesField(w, 1, c.key);
    w.tag(2, WIRE.FIXED64);
    w.double(c.v);
  }
  if (req.forward_only) {
    w.tag(6, WIRE.VARINT);
    w.varint(1);
  }
  return w.finish();
}

interface TensorPlan {
  t: TensorData;
  field: string;
  dtype: number;
  shape: readonly number[];
  shapeBytes: number;
  valueBytes: number;
  /** Size of the SparseCsr message, when sparse. */
  csrSize?: number;
  size: number;
}
interface DatumPlan {
  tokens: ArrayLike<number>[];
  inputs: { key: Uint8Array; tensor: TensorPlan; entrySize: number }[];
  size: number;
}

function planDatum(d: Datum, i: number, utf8: Utf8): DatumPlan {
  let size = 0;
  const tokens = d.model_input.chunks.map((c) => {
    if (c.type !== "encoded_text") {
      throw new Error(`proto encoding of ${c.type} chunks is not supported`);
    }
    size += delimitedSize(1, chunkSize(c.tokens));
    return c.tokens;
  });
  const inputs = Object.entries(d.loss_fn_inputs).map(([k, t]) => {
    const key = utf8.get(k);
    const tensor = planTensor(t, `data[${i}].loss_fn_inputs.${k}`);
    const entrySize = delimitedSize(1, key.length) + delimitedSize(2, tensor.size);
    size += delimitedSize(2, entrySize);
    return { key, tensor, entrySize };
  });
  return { tokens, inputs, size };
}

/** Size of a Chunk holding an EncodedTextChunk. */
function chunkSize(tokens: ArrayLike<number>): number {
  return delimitedSize(1, textSize(tokens));
}

/** Size of an EncodedTextChunk (its `tokens` field is omitted when empty, as proto3 does). */
function textSize(tokens: ArrayLike<number>): number {
  return tokens.length ? delimitedSize(1, tokens.length * 4) : 0;
}

function planTensor(t: TensorData, field: string): TensorPlan {
  const dtype = t.dtype === "int64" ? DTYPE.INT64 : DTYPE.FLOAT32;
  const shape = t.shape ?? [t.data.length];
  const shapeBytes = shape.reduce((n, s) => n + varintSize(s), 0);
  const valueBytes = t.data.length * (dtype === DTYPE.INT64 ? 8 : 4);
  let size = varintFieldSize(3, dtype) + (shape.length ? delimitedSize(4, shapeBytes) : 0);
  let csrSize: number | undefined;
  if (t.sparse_crow_indices) {
    const crow = t.sparse_crow_indices.length * 8, col = (t.sparse_col_indices ?? []).length * 8;
    csrSize = (valueBytes ? delimitedSize(1, valueBytes) : 0) +
      (crow ? delimitedSize(2, crow) : 0) + (col ? delimitedSize(3, col) : 0);
    size += delimitedSize(2, csrSize);
  } else {
    size += delimitedSize(1, valueBytes); // a oneof member is written even when empty
  }
  return { t, field, dtype, shape, shapeBytes, valueBytes, csrSize, size };
}

function writeDatum(w: ProtoWriter, d: DatumPlan): void {
  w.delimited(3, d.size);
  for (const tokens of d.tokens) {
    w.delimited(1, chunkSize(tokens));
    w.delimited(1, textSize(tokens));
    if (tokens.length) {
      w.delimited(1, tokens.length * 4);
      w.int32s(tokens);
    }
  }
  for (const { key, tensor, entrySize } of d.inputs) {
    w.delimited(2, entrySize);
    writeBytesField(w, 1, key);
    w.delimited(2, tensor.size);
    writeTensor(w, tensor);
  }
}

function writeTensor(w: ProtoWriter, p: TensorPlan): void {
  const { t } = p;
  const values = () => {
    if (p.dtype === DTYPE.INT64) w.int64s(t.data, p.field);
    else w.float32s(t.data);
  };
  if (p.csrSize !== undefined) {
    w.delimited(2, p.csrSize);
    if (p.valueBytes) {
      w.delimited(1, p.valueBytes);
      values();
    }
    const crow = t.sparse_crow_indices!, col = t.sparse_col_indices ?? [];
    if (crow.length) {
      w.delimited(2, crow.length * 8);
      w.int64s(crow, `${p.field}.sparse_crow_indices`);
    }
    if (col.length) {
      w.delimited(3, col.length * 8);
      w.int64s(col, `${p.field}.sparse_col_indices`);
    }
  } else {
    w.delimited(1, p.valueBytes);
    values();
  }
  w.tag(3, WIRE.VARINT);
  w.varint(p.dtype);
  if (p.shape.length) {
    w.delimited(4, p.shapeBytes);
    for (const s of p.shape) w.varint(s);
  }
}

function writeBytesField(w: ProtoWriter, field: number, bytes: Uint8Array): void {
  w.delimited(field, bytes.length);
  w.raw(bytes);
}

/**
 * Decodes a protobuf forward_backward request. Tensor values come out typed (see
 * `decodeValues`); token ids and sparse CSR indices as plain arrays.
 */
export function decodeForwardBackwardRequest(bytes: Uint8Array): ForwardBackwardProtoRequest {
  const m = ForwardBackwardRequestType.toObject(ForwardBackwardRequestType.decode(bytes), {
    longs: Number,
    defaults: true,
  }) as ProtoForwardBackwardRequest;
  return {
    model_id: m.model_id,
    seq_id: m.seq_id,
    loss_fn: m.loss_fn,
    loss_fn_config: m.loss_fn_config ?? {},
    forward_only: m.forward_only,
    data: (m.data ?? []).map((d, i) => ({
      model_input: {
        chunks: (d.model_input ?? []).map((c, j) => {
          if (c.encoded_text) {
            const field = `data[${i}].model_input[${j}].tokens`;
            return {
              type: "encoded_text",
              tokens: int32List(c.encoded_text.tokens, field),
            };
          }
          throw new Error(`data[${i}].model_input[${j}]: only encoded_text chunks are supported`);
        }),
      },
      loss_fn_inputs: Object.fromEntries(
        Object.entries(d.loss_fn_inputs ?? {}).map((
          [k, t],
        ) => [k, decodeTensor(t, `data[${i}].loss_fn_inputs.${k}`)]),
      ),
    })),
  };
}

function decodeTensor(t: ProtoTensor, field: string): TensorData {
  const shape: number[] = t.shape ?? [];
  if (t.sparse_csr) {
    const v = decodeValues(t.sparse_csr.values, t.dtype, field);
    return {
      data: v.values,
      dtype: v.dtype,
      shape,
      sparse_crow_indices: toList(int64s(t.sparse_csr.crow_indices, `${field}.crow_indices`)),
      sparse_col_indices: toList(int64s(t.sparse_csr.col_indices, `${field}.col_indices`)),
    };
  }
  const v = decodeValues(t.dense ?? new Uint8Array(), t.dtype, field);
  return { data: v.values, dtype: v.dtype, shape: shape.length ? shape : [v.values.length] };
}
