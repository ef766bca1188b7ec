/**
 * Host-side tensors: plain `Float32Array`s with a shape, named by their parameter path.
 *
 * Weights live on the host whenever they cross a boundary (checkpoints, safetensors files,
 * optimizer state, the sampler/learner hand-off); the engine copies them onto its device.
 * Keeping this type engine-free means checkpoints and tests never depend on jax-js.
 *
 * @module
 */

/** One float32 tensor in host memory, row-major. */
export interface HostTensor {
  /** The tensor's shape. */
  readonly shape: readonly number[];
  /** Its values, row-major. */
  readonly data: Float32Array;
}

/** Tensors by name, e.g. `blocks.0.attn.q.weight`. Insertion order is the canonical order. */
export type NamedTensors = Map<string, HostTensor>;

/** Number of elements of a shape (1 for a scalar). */
export function numel(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/**
 * Makes a host tensor, checking that the data length matches the shape.
 *
 * @example
 * const t = hostTensor([2, 3], new Float32Array(6));
 */
export function hostTensor(shape: readonly number[], data?: Float32Array): HostTensor {
  const n = numel(shape);
  const buf = data ?? new Float32Array(n);
  if (buf.length !== n) {
    throw new RangeError(`tensor data has ${buf.length} elements, shape [${shape}] needs ${n}`);
  }
  return { shape: [...shape], data: buf };
}

/** Total number of scalars across all tensors (the parameter count). */
export function countParameters(tensors: NamedTensors): number {
  let n = 0;
  for (const t of tensors.values()) n += t.data.length;
  return n;
}

/** Deep copy, so that callers can mutate without aliasing a checkpoint or live weights. */
export function cloneTensors(tensors: NamedTensors): NamedTensors {
  const out: NamedTensors = new Map();
  for (const [name, t] of tensors) out.set(name, { shape: [...t.shape], data: t.data.slice() });
  return out;
}
