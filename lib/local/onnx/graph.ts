/**
 * A small builder for ONNX graphs written from TypeScript: nodes, initializers and typed
 * inputs/outputs, serialised to a `ModelProto` with protobufjs (the subset schema in
 * `onnx.proto`). Names are generated, so callers compose ops as functions of value names.
 *
 * @module
 */

import protobuf from "protobufjs";
import { ONNX_PROTO } from "./onnx_proto.ts";

const root = protobuf.parse(ONNX_PROTO, { keepCase: true }).root;
const ModelProto = root.lookupType("onnx.ModelProto");

/** ONNX element types this project writes (`TensorProto.DataType`). */
export const DataType = { float: 1, int64: 7 } as const;

/** An element type of {@link DataType}. */
export type ElemType = keyof typeof DataType;

/** A node attribute, tagged by its ONNX attribute type. */
export type Attr =
  | { f: number }
  | { i: number }
  | { ints: number[] }
  | { floats: number[] }
  | { s: string };

/** A dimension: a fixed size or a symbolic name (batch, sequence, …). */
export type Dim = number | string;

/** ONNX's `AttributeProto.AttributeType` of each tag. */
const ATTR_TYPE = { f: 1, i: 2, s: 3, floats: 6, ints: 7 } as const;

/**
 * Builds one ONNX graph.
 *
 * @example
 * const g = new GraphBuilder();
 * const x = g.input("x", "float", ["batch", 4]);
 * g.output(g.op("Relu", [x]), "y", "float", ["batch", 4]);
 * const bytes = g.toModel({ opset: 17 });
 */
export class GraphBuilder {
  readonly #nodes: unknown[] = [];
  readonly #initializers: unknown[] = [];
  readonly #inputs: unknown[] = [];
  readonly #outputs: unknown[] = [];
  #count = 0;

  /** Declares a graph input and returns its name. */
  input(name: string, type: ElemType, dims: Dim[]): string {
    this.#inputs.push(valueInfo(name, type, dims));
    return name;
  }

  /** Renames `value` to the graph output `name` (through an Identity) and declares it. */
  output(value: string, name: string, type: ElemType, dims: Dim[]): void {
    this.#nodes.push({ op_type: "Identity", input: [value], output: [name], name });
    this.#outputs.push(valueInfo(name, type, dims));
  }

  /** A constant tensor stored in the model (weights, shapes, scalars); returns its name. */
  constant(
    shape: readonly number[],
    data: Float32Array | BigInt64Array,
    name = this.#fresh("const"),
  ): string {
    const type = data instanceof Float32Array ? DataType.float : DataType.int64;
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    this.#initializers.push({ name, dims: [...shape], data_type: type, raw_data: bytes });
    return name;
  }

  /** An int64 constant (shapes, axes, indices). */
  ints(values: readonly number[], shape: readonly number[] = [values.length]): string {
    return this.constant(shape, BigInt64Array.from(values, BigInt));
  }

  /** A float32 scalar constant. */
  scalar(value: number): string {
    return this.constant([], Float32Array.of(value));
  }

  /** Adds a node with one output and returns the output's name. */
  op(type: string, inputs: string[], attrs: Record<string, Attr> = {}, domain = ""): string {
    return this.opN(type, inputs, 1, attrs, domain)[0];
  }

  /** Adds a node with `outputs` outputs and returns their names. */
  opN(
    type: string,
    inputs: string[],
    outputs: number,
    attrs: Record<string, Attr> = {},
    domain = "",
  ): string[] {
    const name = this.#fresh(type);
    const out = Array.from({ length: outputs }, (_, i) => `${name}:${i}`);
    const attribute = Object.entries(attrs).map(([n, a]) => encodeAttr(n, a));
    this.#nodes.push({ op_type: type, input: inputs, output: out, name, attribute, domain });
    return out;
  }

  /** The serialised `ModelProto` (IR version 8). */
  toModel(opts: { opset: number; metadata?: Record<string, string> }): Uint8Array {
    const msg = ModelProto.fromObject({
      ir_version: 8,
      producer_name: "tinkerbench",
      opset_import: [{ domain: "", version: opts.opset }],
      metadata_props: Object.entries(opts.metadata ?? {}).map(([key, value]) => ({ key, value })),
      graph: {
        name: "main",
        node: this.#nodes,
        initializer: this.#initializers,
        input: this.#inputs,
        output: this.#outputs,
      },
    });
    return ModelProto.encode(msg).finish();
  }

  #fresh(prefix: string): string {
    return `${prefix}_${this.#count++}`;
  }
}

function valueInfo(name: string, type: ElemType, dims: Dim[]) {
  const dim = dims.map((d) => typeof d === "number" ? { dim_value: d } : { dim_param: d });
  return { name, type: { tensor_type: { elem_type: DataType[type], shape: { dim } } } };
}

function encodeAttr(name: string, a: Attr) {
  if ("f" in a) return { name, type: ATTR_TYPE.f, f: a.f };
  if ("i" in a) return { name, type: ATTR_TYPE.i, i: a.i };
  if ("ints" in a) return { name, type: ATTR_TYPE.ints, ints: a.ints };
  if ("floats" in a) return { name, type: ATTR_TYPE.floats, floats: a.floats };
  return { name, type: ATTR_TYPE.s, s: new TextEncoder().encode(a.s) };
}
