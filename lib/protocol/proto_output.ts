/**
 * The protobuf form of a forward / forward_backward result (SDK 0.25): per-datum output
 * tensors batched field by field into `ArrayRecord`s (all datums' values concatenated, with
 * byte offsets), and the metrics.
 *
 * The decoder copies each batched field once and hands every datum a typed view of its slice,
 * so a 1k-datum result costs a few memcpys, not a million array pushes.
 *
 * @module
 */

import { decodeValues, DTYPE, dtypeWidth, int64s } from "./proto_arrays.ts";
import { protoType } from "./proto_schema.ts";
import { delimitedSize, ProtoWriter, varintFieldSize, varintSize, WIRE } from "./proto_writer.ts";
import type { ForwardBackwardOutput, TensorData } from "./types.ts";

const ForwardBackwardOutputType = protoType("ForwardBackwardOutput");

// Shape of a decoded message (protobufjs `toObject` with longs as numbers).
interface ProtoBatchedTensor {
  data: Uint8Array;
  offsets: Uint8Array;
  dtype: number;
  trailing_shape?: number[];
}
interface ProtoForwardBackwardOutput {
  loss_fn_output_type: string;
  loss_fn_outputs?: Array<{ num_datums: number; fields?: Record<string, ProtoBatchedTensor> }>;
  metrics?: Record<string, number>;
}

const encoder = new TextEncoder();
const RECORD_TAG = encoder.encode("ArrayRecord");

interface FieldPlan {
  key: Uint8Array;
  tensors: TensorData[];
  dtype: number;
  trailing: number[];
  trailingBytes: number;
  dataBytes: number;
  /** Size of the BatchedTensor message. */
  tensorSize: number;
  /** Size of its map entry (key and BatchedTensor). */
  size: number;
}
interface RecordPlan {
  datums: number;
  fields: FieldPlan[];
  size: number;
}

/**
 * Encodes forward_backward outputs: each field batched over datums. Datums whose tensors share
 * dtypes and trailing shapes go in one `ArrayRecord`; a change starts the next record, as the
 * SDK reads ragged outputs (e.g. a varying top-k width).
 */
export function encodeForwardBackwardOutput(out: ForwardBackwardOutput): Uint8Array {
  const outputs = out.loss_fn_outputs;
  const keys = [...new Set(outputs.flatMap((o) => Object.keys(o)))];
  outputs.forEach((o, i) => {
    for (const key of keys) if (!o[key]) throw new Error(`loss_fn_outputs[${i}] lacks ${key}`);
  });
  const records: RecordPlan[] = [];
  let start = 0;
  for (let i = 1; i <= outputs.length; i++) {
    if (i < outputs.length && keys.every((k) => sameLayout(outputs[i - 1][k], outputs[i][k]))) {
      continue;
    }
    records.push(planRecord(outputs, keys, start, i));
    start = i;
  }
  const type = encoder.encode(out.loss_fn_output_type);
  const metrics = Object.entries(out.metrics).map(([k, v]) => ({ key: encoder.encode(k), v }));
  const metricSize = (key: Uint8Array) => delimitedSize(1, key.length) + 1 + 8;
  let size = type.length ? delimitedSize(1, type.length) : 0;
  for (const r of records) size += delimitedSize(2, r.size);
  for (const m of metrics) size += delimitedSize(3, metricSize(m.key));

  const w = new ProtoWriter(size);
  if (type.length) writeBytes(w, 1, type);
  for (const r of records) writeRecord(w, r);
  for (const m of metrics) {
    w.delimited(3, metricSize(m.key));
    writeBytes(w, 1, m.key);
    w.tag(2, WIRE.FIXED64);
    w.double(m.v);
  }
  return w.finish();
}

function trailingOf(t: TensorData): number[] {
  return (t.shape ?? [t.data.length]).slice(1);
}

function sameLayout(a: TensorData, b: TensorData): boolean {
  const ta = trailingOf(a), tb = trailingOf(b);
  return a.dtype === b.dtype && ta.length === tb.length && ta.every((x, i) => x === tb[i]);
}

function planRecord(
  outputs: ForwardBackwardOutput["loss_fn_outputs"],
  keys: string[],
  start: number,
  end: number,
): RecordPlan {
  const datums = end - start;
  const fields = keys.map((k): FieldPlan => {
    const tensors = outputs.slice(start, end).map((o) => o[k]);
    tensors.forEach((t, j) => {
      const shape = t.shape ?? [t.data.length];
      if (shape.reduce((a, b) => a * b, 1) !== t.data.length) {
        throw new Error(
          `loss_fn_outputs[${start + j}].${k}: ${t.data.length} values for shape [${shape}]`,
        );
      }
    });
    const dtype = tensors[0].dtype === "int64" ? DTYPE.INT64 : DTYPE.FLOAT32;
    const width = dtypeWidth(dtype)!;
    const trailing = trailingOf(tensors[0]);
    const trailingBytes = trailing.reduce((n, s) => n + varintSize(s), 0);
    const dataBytes = tensors.reduce((n, t) => n + t.data.length * width, 0);
    const key = encoder.encode(k);
    const tensorSize = (dataBytes ? delimitedSize(1, dataBytes) : 0) +
      delimitedSize(2, (datums + 1) * 8) + varintFieldSize(3, dtype) +
      (trailing.length ? delimitedSize(4, trailingBytes) : 0);
    const size = delimitedSize(1, key.length) + delimitedSize(2, tensorSize);
    return { key, tensors, dtype, trailing, trailingBytes, dataBytes, tensorSize, size };
  });
  const size = delimitedSize(1, RECORD_TAG.length) +
    fields.reduce((n, f) => n + delimitedSize(2, f.size), 0) + varintFieldSize(3, datums);
  return { datums, fields, size };
}

function writeRecord(w: ProtoWriter, r: RecordPlan): void {
  w.delimited(2, r.size);
  writeBytes(w, 1, RECORD_TAG);
  for (const f of r.fields) {
    w.delimited(2, f.size);
    writeBytes(w, 1, f.key);
    w.delimited(2, f.tensorSize);
    if (f.dataBytes) {
      w.delimited(1, f.dataBytes);
      for (const t of f.tensors) {
        if (f.dtype === DTYPE.INT64) w.int64s(t.data, "loss_fn_outputs");
        else w.float32s(t.data);
      }
    }
    const width = dtypeWidth(f.dtype)!;
    const offsets = new Float64Array(f.tensors.length + 1);
    f.tensors.forEach((t, i) => offsets[i + 1] = offsets[i] + t.data.length * width);
    w.delimited(2, offsets.length * 8);
    w.int64s(offsets, "offsets");
    w.tag(3, WIRE.VARINT);
    w.varint(f.dtype);
    if (f.trailing.length) {
      w.delimited(4, f.trailingBytes);
      for (const s of f.trailing) w.varint(s);
    }
  }
  w.tag(3, WIRE.VARINT);
  w.varint(r.datums);
}

function writeBytes(w: ProtoWriter, field: number, bytes: Uint8Array): void {
  w.delimited(field, bytes.length);
  w.raw(bytes);
}

/**
 * Decodes forward_backward outputs, concatenating the datums of every ArrayRecord. Each
 * datum's tensor is a typed view (see `decodeValues`) of its slice of the batched field.
 */
export function decodeForwardBackwardOutput(bytes: Uint8Array): ForwardBackwardOutput {
  const m = ForwardBackwardOutputType.toObject(ForwardBackwardOutputType.decode(bytes), {
    longs: Number,
    defaults: true,
  }) as ProtoForwardBackwardOutput;
  const outputs: Array<Record<string, TensorData>> = [];
  for (const rec of m.loss_fn_outputs ?? []) {
    const first = outputs.length;
    for (let i = 0; i < rec.num_datums; i++) outputs.push({});
    for (const [key, b] of Object.entries(rec.fields ?? {})) {
      const field = `loss_fn_outputs[${first}..${first + rec.num_datums - 1}].${key}`;
      const all = decodeValues(b.data, b.dtype, field);
      const width = dtypeWidth(b.dtype)!;
      const offsets = int64s(b.offsets, `${field} offsets`);
      if (offsets.length !== rec.num_datums + 1) {
        throw new Error(`${field}: ${offsets.length} offsets for ${rec.num_datums} datums`);
      }
      const trailing: number[] = b.trailing_shape ?? [];
      const per = trailing.reduce((a, x) => a * x, 1);
      for (let i = 0; i < rec.num_datums; i++) {
        const lo = offsets[i] / width, hi = offsets[i + 1] / width;
        const n = hi - lo;
        if (
          !Number.isInteger(lo) || !Number.isInteger(hi) || lo < 0 || n < 0 ||
          hi > all.values.length || (per === 0 ? n !== 0 : n % per !== 0)
        ) {
          throw new Error(
            `loss_fn_outputs[${first + i}].${key}: bad byte offsets ${offsets[i]}..${
              offsets[i + 1]
            } for ${b.data.length} bytes of trailing shape [${trailing}]`,
          );
        }
        outputs[first + i][key] = {
          data: all.values.subarray(lo, hi),
          dtype: all.dtype,
          shape: [per === 0 ? 0 : n / per, ...trailing],
        };
      }
    }
  }
  return {
    loss_fn_output_type: m.loss_fn_output_type.split(":").at(-1)!,
    loss_fn_outputs: outputs,
    metrics: m.metrics ?? {},
  };
}
