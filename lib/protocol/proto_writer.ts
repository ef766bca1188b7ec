/**
 * A protobuf writer into one buffer of a size computed beforehand, for the large messages of
 * the wire (forward_backward requests and results). Numeric arrays are written straight from
 * plain or typed arrays: a typed array of the field's own width is copied byte for byte, any
 * other is converted value by value into the output, so no intermediate array is built.
 *
 * Sizes are measured first with {@link varintSize} and {@link delimitedSize}, then written;
 * `finish` checks that both passes agree.
 *
 * @module
 */

/** Wire types of protobuf fields. */
export const WIRE = { VARINT: 0, FIXED64: 1, DELIMITED: 2 } as const;

const TWO_32 = 2 ** 32;
const TWO_63 = 2 ** 63;

/** Bytes of a varint of a non-negative integer (< 2^53), or 10 for a negative one. */
export function varintSize(n: number): number {
  if (n < 0) return 10;
  let size = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/** Bytes of a length-delimited field of `length` bytes (tag, length, payload). */
export function delimitedSize(field: number, length: number): number {
  return varintSize(field << 3) + varintSize(length) + length;
}

/** Bytes of a varint field (tag and value). */
export function varintFieldSize(field: number, n: number): number {
  return varintSize(field << 3) + varintSize(n);
}

/** A fixed-size protobuf writer; see the module doc. */
export class ProtoWriter {
  readonly bytes: Uint8Array;
  readonly #view: DataView;
  pos = 0;

  constructor(size: number) {
    this.bytes = new Uint8Array(size);
    this.#view = new DataView(this.bytes.buffer);
  }

  /** A field's tag. */
  tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  /** A varint: non-negative integers below 2^53, or negative int32/int64 as 10 bytes. */
  varint(n: number): void {
    const b = this.bytes;
    if (n < 0) {
      let u = BigInt.asUintN(64, BigInt(n));
      while (u >= 128n) {
        b[this.pos++] = Number(u & 127n) | 128;
        u >>= 7n;
      }
      b[this.pos++] = Number(u);
      return;
    }
    while (n >= 128) {
      b[this.pos++] = (n % 128) | 128;
      n = Math.floor(n / 128);
    }
    b[this.pos++] = n;
  }

  /** A length-delimited field's tag and length; the caller writes the payload next. */
  delimited(field: number, length: number): void {
    this.tag(field, WIRE.DELIMITED);
    this.varint(length);
  }

  /** Raw bytes. */
  raw(bytes: Uint8Array): void {
    this.bytes.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /** A little-endian double (a fixed64 field's payload). */
  double(x: number): void {
    this.#view.setFloat64(this.pos, x, true);
    this.pos += 8;
  }

  /** Values as little-endian float32. */
  float32s(values: ArrayLike<number>): void {
    if (values instanceof Float32Array) return this.raw(bytesOf(values));
    const view = this.#view;
    let p = this.pos;
    for (let i = 0; i < values.length; i++, p += 4) view.setFloat32(p, values[i], true);
    this.pos = p;
  }

  /** Values as little-endian int32 (token ids). */
  int32s(values: ArrayLike<number>): void {
    if (values instanceof Int32Array) return this.raw(bytesOf(values));
    const view = this.#view;
    let p = this.pos;
    for (let i = 0; i < values.length; i++, p += 4) view.setInt32(p, values[i], true);
    this.pos = p;
  }

  /**
   * Values as little-endian int64, truncated toward zero as the SDK's numpy cast does;
   * `field` names the tensor when a value is not finite or beyond ±2^63.
   */
  int64s(values: ArrayLike<number>, field: string): void {
    const view = this.#view;
    let p = this.pos;
    if (values instanceof Int32Array) {
      for (let i = 0; i < values.length; i++, p += 8) {
        const v = values[i];
        view.setInt32(p, v, true);
        view.setInt32(p + 4, v >> 31, true);
      }
    } else {
      for (let i = 0; i < values.length; i++, p += 8) {
        const v = values[i];
        if (v === (v | 0)) {
          view.setInt32(p, v, true);
          view.setInt32(p + 4, v >> 31, true);
          continue;
        }
        const t = Math.trunc(v);
        if (!(Math.abs(t) < TWO_63)) {
          throw new Error(`${field}[${i}] = ${v} is not an int64 value`);
        }
        const hi = Math.floor(t / TWO_32);
        view.setUint32(p, t - hi * TWO_32, true);
        view.setInt32(p + 4, hi, true);
      }
    }
    this.pos = p;
  }

  /** The written bytes; throws when the measured size was wrong (a bug, not bad input). */
  finish(): Uint8Array {
    if (this.pos !== this.bytes.length) {
      throw new Error(`protobuf writer: wrote ${this.pos} bytes of ${this.bytes.length} measured`);
    }
    return this.bytes;
  }
}

/** The bytes under a typed array (a view, no copy). */
export function bytesOf(a: ArrayBufferView): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}
