/**
 * The tensor engine of the local backend: @jax-js/jax on its `wasm` device.
 *
 * Every module that touches jax-js calls {@link initEngine} first. Weights cross the
 * host/device boundary only here: {@link toDevice} copies host tensors onto the device as a
 * {@link ParamTree}, {@link toHost} reads them back.
 *
 * Ownership (jax-js reference counting): every jax-js op *consumes* its array arguments, and
 * so do the model functions in this project unless their JSDoc says "borrows". Pass
 * `tree.ref(params)` (or `x.ref`) to keep using a value after a call.
 *
 * @module
 */

import { defaultDevice, init, numpy as np, tree } from "@jax-js/jax";
import { hostTensor, type NamedTensors } from "./tensors.ts";
import { watchHeap } from "./heap.ts";

/**
 * Device parameters keyed by their `params.ts` name (e.g. `blocks.0.attn.q.weight`).
 *
 * A plain object (not a Map) because jax-js transformations (`jit`, `grad`, `tree.*`) walk
 * plain objects as pytrees: the key set is part of a jitted function's cache key, the
 * shapes are the rest, and the values are traced.
 */
export type ParamTree = Record<string, np.Array>;

let ready: Promise<void> | undefined;

/**
 * Starts jax-js on the `wasm` device. Idempotent: concurrent and repeated calls share one
 * start-up.
 *
 * The device is set explicitly because jax-js lists `webgpu` under Deno (via a software
 * adapter) although its kernels fail there.
 */
export function initEngine(): Promise<void> {
  ready ??= (async () => {
    watchHeap();
    const available = await init("wasm");
    if (!available.includes("wasm")) {
      throw new Error(`jax-js could not start its wasm device (available: ${available})`);
    }
    defaultDevice("wasm");
    const device = defaultDevice();
    if (device !== "wasm") throw new Error(`jax-js default device is ${device}, expected wasm`);
  })();
  return ready;
}

/** Copies host tensors onto the device, keeping their names (and the map's order). */
export function toDevice(tensors: NamedTensors): ParamTree {
  const out: ParamTree = {};
  for (const [name, t] of tensors) {
    // np.array copies into the device heap; the cast only narrows ArrayBufferLike.
    out[name] = np.array(t.data as Float32Array<ArrayBuffer>, { shape: [...t.shape] });
  }
  return out;
}

/**
 * Reads device parameters back to the host. Borrows `params`: the device arrays stay alive,
 * so a checkpoint can be saved mid-training.
 */
export async function toHost(params: ParamTree): Promise<NamedTensors> {
  const names = Object.keys(params);
  const data = await Promise.all(names.map((n) => params[n].ref.data()));
  const out: NamedTensors = new Map();
  names.forEach((n, i) => {
    out.set(n, hostTensor(params[n].shape, new Float32Array(data[i] as Float32Array)));
  });
  return out;
}

/** Frees every array of a tree (null and undefined are no-ops). */
export function disposeTree(params: ParamTree | null | undefined): void {
  tree.dispose(params);
}

/** An int32 device array, e.g. token ids `[B, T]`. */
export function int32Array(data: Int32Array | readonly number[], shape: number[]): np.Array {
  const buf = data instanceof Int32Array ? data : Int32Array.from(data);
  return np.array(buf as Int32Array<ArrayBuffer>, { shape, dtype: np.int32 });
}

const jitted = new Map<string, unknown>();

/**
 * A module-level cache of jitted functions keyed by their graph-shaping options, e.g.
 * `cachedJit(\`fwd:${JSON.stringify(spec)}\`, () => jit((base, lora, x) => ...))`.
 *
 * Why: options that are plain numbers (head count, LoRA scale) must be closed over rather
 * than passed through `grad` (which would trace them), yet a jitted function must outlive
 * any one set of weights, or every new sampler/optimizer step would recompile (1–3 s at
 * the bench size). jax-js then caches one compiled program per input shape inside it.
 */
export function cachedJit<F>(key: string, build: () => F): F {
  let f = jitted.get(key) as F | undefined;
  if (f === undefined) {
    f = build();
    jitted.set(key, f);
  }
  return f;
}

/** Reads a float32 device array to the host, consuming it. */
export async function readFloat32(x: np.Array): Promise<Float32Array> {
  return (await x.data()) as Float32Array;
}
