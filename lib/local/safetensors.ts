/**
 * Reading and writing the safetensors format (float32 only), the format Hugging Face and
 * PEFT use for weights and adapters, so checkpoints can be inspected with standard tools.
 *
 * Layout: 8-byte little-endian header length N, N bytes of JSON header
 * `{name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__"?: {str: str}}`,
 * then the raw little-endian tensor bytes.
 *
 * @module
 */

import { hostTensor, type NamedTensors, numel } from "./tensors.ts";

/** A parsed safetensors file: the tensors plus the free-form string metadata. */
export interface SafetensorsFile {
  tensors: NamedTensors;
  metadata: Record<string, string>;
}

/** Raised when bytes are not a valid float32 safetensors file. */
export class SafetensorsError extends Error {
  override name = "SafetensorsError";
}

const ALIGN = 8;

/**
 * Serialises tensors (in map order) to safetensors bytes.
 *
 * @example
 * const bytes = encodeSafetensors(new Map([["w", hostTensor([2], new Float32Array([1, 2]))]]));
 */
export function encodeSafetensors(
  tensors: NamedTensors,
  metadata: Record<string, string> = {},
): Uint8Array {
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const [name, t] of tensors) {
    const bytes = t.data.length * 4;
    header[name] = { dtype: "F32", shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = new TextEncoder().encode(JSON.stringify(header));
  // Pad the header with spaces so tensor data starts 8-byte aligned (what the Rust crate does).
  const padded = Math.ceil(json.length / ALIGN) * ALIGN;
  if (padded !== json.length) {
    const p = new Uint8Array(padded).fill(0x20);
    p.set(json);
    json = p;
  }
  const out = new Uint8Array(8 + json.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let pos = 8 + json.length;
  for (const t of tensors.values()) {
    out.set(toLittleEndianBytes(t.data), pos);
    pos += t.data.length * 4;
  }
  return out;
}

/** Parses safetensors bytes. Only F32 tensors are accepted; anything malformed throws. */
export function decodeSafetensors(bytes: Uint8Array): SafetensorsFile {
  if (bytes.length < 8) throw new SafetensorsError("file shorter than its 8-byte header length");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen = Number(view.getBigUint64(0, true));
  if (headerLen > bytes.length - 8) {
    throw new SafetensorsError(`header length ${headerLen} exceeds file size ${bytes.length}`);
  }
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLen)));
  } catch (e) {
    throw new SafetensorsError(`header is not valid JSON: ${(e as Error).message}`);
  }
  const dataStart = 8 + headerLen;
  const tensors: NamedTensors = new Map();
  let metadata: Record<string, string> = {};
  const entries = Object.entries(header).sort(([, a], [, b]) => offsetsOf(a)[0] - offsetsOf(b)[0]);
  for (const [name, info] of entries) {
    if (name === "__metadata__") {
      metadata = info as Record<string, string>;
      continue;
    }
    const { dtype, shape, data_offsets } = info as {
      dtype: string;
      shape: number[];
      data_offsets: [number, number];
    };
    if (dtype !== "F32") throw new SafetensorsError(`tensor ${name}: dtype ${dtype} unsupported`);
    const [begin, end] = data_offsets;
    if (end - begin !== numel(shape) * 4 || dataStart + end > bytes.length) {
      throw new SafetensorsError(`tensor ${name}: data_offsets do not match shape [${shape}]`);
    }
    tensors.set(
      name,
      hostTensor(shape, fromLittleEndianBytes(bytes, dataStart + begin, end - begin)),
    );
  }
  return { tensors, metadata };
}

/** Reads a safetensors file from disk. */
export async function readSafetensors(path: string): Promise<SafetensorsFile> {
  return decodeSafetensors(await Deno.readFile(path));
}

/** Writes a safetensors file atomically (temp file + rename), so a crash never leaves half a file. */
export async function writeSafetensors(
  path: string,
  tensors: NamedTensors,
  metadata: Record<string, string> = {},
): Promise<void> {
  const tmp = `${path}.${crypto.randomUUID()}.tmp`;
  await Deno.writeFile(tmp, encodeSafetensors(tensors, metadata));
  await Deno.rename(tmp, path);
}

function offsetsOf(info: unknown): [number, number] {
  const o = (info as { data_offsets?: [number, number] })?.data_offsets;
  return o ?? [-1, -1];
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function toLittleEndianBytes(data: Float32Array): Uint8Array {
  if (LITTLE_ENDIAN) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const out = new Uint8Array(data.length * 4);
  const v = new DataView(out.buffer);
  data.forEach((x, i) => v.setFloat32(i * 4, x, true));
  return out;
}

function fromLittleEndianBytes(bytes: Uint8Array, start: number, length: number): Float32Array {
  const out = new Float32Array(length / 4);
  new Uint8Array(out.buffer).set(bytes.subarray(start, start + length));
  if (!LITTLE_ENDIAN) {
    const v = new DataView(bytes.buffer, bytes.byteOffset + start, length);
    for (let i = 0; i < out.length; i++) out[i] = v.getFloat32(i * 4, true);
  }
  return out;
}
