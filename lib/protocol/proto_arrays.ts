/**
 * Typed arrays out of protobuf byte fields. Byte fields sit at any offset of a message, and a
 * typed array needs an offset that is a multiple of its width, so a float32 or int32 field is
 * copied once (a memcpy) into a fresh buffer and then viewed; int64 fields are read in place
 * into the narrowest exact typed array. Nothing is pushed value by value into a JavaScript
 * array, except token ids, which the rest of the code keeps in plain arrays.
 *
 * @module
 */

/** Wire dtypes (`tinker_public.DType`). */
export const DTYPE = { FLOAT32: 1, INT64: 2, INT32: 3, BFLOAT16: 4 } as const;

/** Bytes per value of a wire dtype, or undefined for an unknown one. */
export function dtypeWidth(dtype: number): number | undefined {
  switch (dtype) {
    case DTYPE.FLOAT32:
    case DTYPE.INT32:
      return 4;
    case DTYPE.INT64:
      return 8;
    case DTYPE.BFLOAT16:
      return 2;
  }
  return undefined;
}

/** Decoded values and their public dtype (int widths collapse to int64, bfloat16 to float32). */
export interface DecodedValues {
  values: Float32Array | Int32Array | Float64Array;
  dtype: "int64" | "float32";
}

/**
 * Values of a byte field in a wire dtype: float32 and bfloat16 → Float32Array; int32 →
 * Int32Array; int64 → Int32Array when every value fits 32 bits (token ids always do), else
 * Float64Array, exact up to 2^53; a larger value is an error naming `field`.
 */
export function decodeValues(bytes: Uint8Array, dtype: number, field: string): DecodedValues {
  const width = dtypeWidth(dtype);
  if (width === undefined) throw new Error(`${field}: unsupported dtype ${dtype}`);
  checkLength(bytes, width, field);
  switch (dtype) {
    case DTYPE.FLOAT32:
      return { values: new Float32Array(copyBuffer(bytes)), dtype: "float32" };
    case DTYPE.INT32:
      return { values: new Int32Array(copyBuffer(bytes)), dtype: "int64" };
    case DTYPE.INT64:
      return { values: narrowInt64(bytes, field), dtype: "int64" };
    default: {
      // bfloat16 is the high half of a float32.
      const u16 = new Uint16Array(copyBuffer(bytes));
      const u32 = new Uint32Array(u16.length);
      for (let i = 0; i < u16.length; i++) u32[i] = u16[i] << 16;
      return { values: new Float32Array(u32.buffer), dtype: "float32" };
    }
  }
}

/** Little-endian int32 values of a byte field. */
export function int32s(bytes: Uint8Array, field = "int32 array"): Int32Array {
  checkLength(bytes, 4, field);
  return new Int32Array(copyBuffer(bytes));
}

/**
 * Little-endian int32 values of a byte field as a plain array (token ids, which the rest of
 * the code keeps in plain arrays), read in place: no aligned copy, and a loop rather than
 * `Array.from`, which is an order of magnitude slower on typed arrays.
 */
export function int32List(bytes: Uint8Array, field = "int32 array"): number[] {
  checkLength(bytes, 4, field);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Array<number>(bytes.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = view.getInt32(4 * i, true);
  return out;
}

/** Values of a typed array as a plain array (a loop: `Array.from` is slow on typed arrays). */
export function toList(values: ArrayLike<number>): number[] {
  const out = new Array<number>(values.length);
  for (let i = 0; i < out.length; i++) out[i] = values[i];
  return out;
}

/** Little-endian float32 values of a byte field. */
export function float32s(bytes: Uint8Array, field = "float32 array"): Float32Array {
  checkLength(bytes, 4, field);
  return new Float32Array(copyBuffer(bytes));
}

/** Little-endian int64 values of a byte field (indices, offsets), as numbers. */
export function int64s(bytes: Uint8Array, field = "int64 array"): Int32Array | Float64Array {
  checkLength(bytes, 8, field);
  return narrowInt64(bytes, field);
}

/**
 * int64 values, read in place from their (low, high) int32 words: an Int32Array when every
 * high word is the sign of its low word, else a Float64Array (exact up to ±2^53; beyond that a
 * value cannot be a JavaScript number, which is an error).
 */
function narrowInt64(bytes: Uint8Array, field: string): Int32Array | Float64Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Int32Array(bytes.length / 8);
  for (let i = 0; i < out.length; i++) {
    const lo = view.getInt32(8 * i, true);
    if (view.getInt32(8 * i + 4, true) !== lo >> 31) return wideInt64(view, out.length, field);
    out[i] = lo;
  }
  return out;
}

function wideInt64(view: DataView, n: number, field: string): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const hi = view.getInt32(8 * i + 4, true);
    if (hi >= 2 ** 21 || hi < -(2 ** 21)) {
      throw new Error(`${field}[${i}]: an int64 beyond ±2^53 cannot be a JavaScript number`);
    }
    out[i] = hi * 2 ** 32 + view.getUint32(8 * i, true);
  }
  return out;
}

/** A copy of the field's bytes in a buffer of its own, so that any typed view is aligned. */
function copyBuffer(bytes: Uint8Array): ArrayBuffer {
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  return copy.buffer;
}

function checkLength(bytes: Uint8Array, width: number, field: string): void {
  if (bytes.length % width !== 0) {
    throw new Error(
      `${field}: ${bytes.length} bytes is not a whole number of ${width}-byte values`,
    );
  }
}
