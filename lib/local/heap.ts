/**
 * How big jax-js's wasm heap is. jax-js allocates every device buffer in one WebAssembly
 * memory (at most 4 GiB, memory32) with a bump allocator: a freed buffer goes to a free list
 * of its size class and is reused only by a buffer of the same class; the memory never
 * shrinks. So the memory's size is the heap's high-water mark, the number every memory
 * budget of the local backend is about.
 *
 * jax-js does not expose its allocator, so the meter watches `WebAssembly.Memory.prototype.
 * grow`, which the allocator calls whenever its bump pointer passes the end of the memory:
 * the first shared memory seen growing is jax-js's.
 *
 * @module
 */

/** The wasm32 limit: jax-js's allocator throws past it. */
export const HEAP_LIMIT_BYTES = 2 ** 32;

/** What a heap listener is told after each growth. */
export interface HeapGrowth {
  /** Heap size before and after, in bytes. */
  before: number;
  after: number;
}

let heap: WebAssembly.Memory | undefined;
let installed = false;
const listeners = new Set<(g: HeapGrowth) => void>();

/**
 * Starts watching heap growth (idempotent). Must run before jax-js allocates its first
 * buffer, which `initEngine` ensures; until then {@link heapBytes} is 0.
 */
export function watchHeap(): void {
  if (installed) return;
  installed = true;
  const proto = WebAssembly.Memory.prototype;
  const grow = proto.grow;
  proto.grow = function (this: WebAssembly.Memory, delta: number): number {
    const before = this.buffer.byteLength;
    const pages = grow.call(this, delta);
    if (heap === undefined && this.buffer instanceof SharedArrayBuffer) heap = this;
    if (this === heap) {
      const g = { before, after: this.buffer.byteLength };
      for (const l of listeners) l(g);
    }
    return pages;
  };
}

/** Bytes of jax-js's wasm heap: its high-water mark (0 before the first buffer). */
export function heapBytes(): number {
  return heap?.buffer.byteLength ?? 0;
}

/**
 * Calls `listener` after every heap growth until the returned function is called.
 *
 * @example
 * const stop = onHeapGrowth(({ after }) => console.log(`heap ${after >> 20} MiB`));
 */
export function onHeapGrowth(listener: (g: HeapGrowth) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
