/**
 * Converts wire datums (ModelInput + TensorData) into the learner's dense typed arrays.
 * Sparse CSR tensors (the SDK sends them for 2-D targets when that is smaller) are expanded.
 *
 * @module
 */

import { UserInputError } from "../errors.ts";
import type { LearnerDatum } from "../train/mod.ts";
import { modelInputTokens } from "../backend.ts";
import type * as wire from "../../protocol/mod.ts";

/** Wire datums to learner datums; malformed tensors are a 400 naming the datum and key. */
export function toLearnerDatums(data: readonly wire.Datum[]): LearnerDatum[] {
  return data.map((d, i) => {
    const tokens = Int32Array.from(modelInputTokens(d.model_input, `data[${i}].model_input`));
    const inputs: LearnerDatum["inputs"] = {};
    for (const [key, t] of Object.entries(d.loss_fn_inputs)) {
      inputs[key] = denseTensor(t, `data[${i}].loss_fn_inputs.${key}`, tokens.length);
    }
    return { tokens, inputs };
  });
}

function denseTensor(t: wire.TensorData, field: string, n: number) {
  const shape = t.shape ?? [t.sparse_crow_indices ? n : t.data.length];
  const size = shape.reduce((a, b) => a * b, 1);
  const values = t.sparse_crow_indices ? expandCsr(t, shape, field) : t.data;
  if (values.length !== size) {
    throw new UserInputError(`${field} has ${values.length} values but shape [${shape}]`);
  }
  if (t.dtype === "int64") {
    const out = new Int32Array(size);
    for (let i = 0; i < size; i++) {
      const v = Number(values[i]);
      if (!Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) {
        throw new UserInputError(`${field}[${i}] = ${values[i]} is not a 32-bit integer`);
      }
      out[i] = v;
    }
    return { shape, data: out };
  }
  return { shape, data: Float32Array.from(values, Number) };
}

function expandCsr(t: wire.TensorData, shape: number[], field: string): Float32Array {
  const crow = t.sparse_crow_indices!, col = t.sparse_col_indices ?? [];
  if (shape.length !== 2 || crow.length !== shape[0] + 1 || col.length !== t.data.length) {
    throw new UserInputError(
      `${field}: sparse CSR needs a 2-D shape, ${
        shape[0] + 1
      } row offsets and one column per value`,
    );
  }
  const [rows, cols] = shape;
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let k = Number(crow[r]); k < Number(crow[r + 1]); k++) {
      const c = Number(col[k]);
      if (c < 0 || c >= cols) throw new UserInputError(`${field}: column index ${c} out of range`);
      out[r * cols + c] = Number(t.data[k]);
    }
  }
  return out;
}
