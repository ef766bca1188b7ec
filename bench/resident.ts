/**
 * Where a process's resident memory is, from Linux's `/proc/self/smaps`: jax-js's wasm heap,
 * glibc's main malloc heap, code (the deno binary and compiled wasm kernels) and every other
 * anonymous mapping (V8's heaps of the main thread and jax-js's two workers, thread stacks and
 * malloc arenas). The soak benchmark records it per step, so growth in resident memory can be
 * put on a part of the process instead of guessed at.
 *
 * @module
 */

/** Resident MiB by kind; every field is 0 where `/proc/self/smaps` cannot be read. */
export interface ResidentBreakdown {
  /** The anonymous mapping as large as jax-js's wasm heap (its resident part). */
  wasm_heap_mib: number;
  /** glibc's main-thread malloc heap (`[heap]`), where large native buffers land. */
  malloc_heap_mib: number;
  /** File-backed, executable and other named mappings: the deno binary, compiled kernels, stacks. */
  code_mib: number;
  /** Every other anonymous mapping. */
  other_anon_mib: number;
}

interface Mapping {
  perms: string;
  path: string;
  sizeKiB: number;
  rssKiB: number;
}

/** Parses the text of `/proc/<pid>/smaps` into its mappings. */
export function parseSmaps(text: string): Mapping[] {
  const maps: Mapping[] = [];
  let cur: Mapping | undefined;
  for (const line of text.split("\n")) {
    const head = /^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      cur = { perms: head[1], path: head[2].trim(), sizeKiB: 0, rssKiB: 0 };
      maps.push(cur);
    } else if (cur && line.startsWith("Size:")) cur.sizeKiB = Number(line.split(/\s+/)[1]);
    else if (cur && line.startsWith("Rss:")) cur.rssKiB = Number(line.split(/\s+/)[1]);
  }
  return maps;
}

/**
 * Splits resident memory by kind. `wasmHeapBytes` (from `heapBytes()`) picks out jax-js's
 * memory: the anonymous mapping of that size, to within a page.
 */
export function residentBreakdown(
  maps: Mapping[],
  wasmHeapBytes: number,
): ResidentBreakdown {
  const kib = { wasm: 0, malloc: 0, code: 0, other: 0 };
  const wasmKiB = wasmHeapBytes / 1024;
  let wasmFound = false;
  for (const m of maps) {
    if (m.path === "[heap]") kib.malloc += m.rssKiB;
    else if (m.path !== "" || m.perms.includes("x")) kib.code += m.rssKiB;
    else if (!wasmFound && wasmKiB > 0 && Math.abs(m.sizeKiB - wasmKiB) <= 64) {
      kib.wasm += m.rssKiB;
      wasmFound = true;
    } else kib.other += m.rssKiB;
  }
  const mib = (k: number) => Math.round(k / 1024);
  return {
    wasm_heap_mib: mib(kib.wasm),
    malloc_heap_mib: mib(kib.malloc),
    code_mib: mib(kib.code),
    other_anon_mib: mib(kib.other),
  };
}

/** This process's breakdown, or zeros where `/proc/self/smaps` does not exist (not Linux). */
export function residentNow(wasmHeapBytes: number): ResidentBreakdown {
  let text = "";
  try {
    text = Deno.readTextFileSync("/proc/self/smaps");
  } catch {
    // Not Linux: the soak still records RSS, just not where it is.
  }
  return residentBreakdown(parseSmaps(text), wasmHeapBytes);
}

let compiles = 0;

/**
 * Counts wasm modules compiled from now on (jax-js compiles one per distinct kernel and keeps
 * each for the life of the process), by wrapping `WebAssembly.compile` and the `Module`
 * constructor. Idempotent; returns a function reading the count.
 */
export function watchCompiles(): () => number {
  const wasm = WebAssembly as unknown as Record<string, unknown> & { __tbCounted?: boolean };
  if (!wasm.__tbCounted) {
    wasm.__tbCounted = true;
    const compile = WebAssembly.compile;
    wasm.compile = (bytes: BufferSource) => {
      compiles++;
      return compile(bytes);
    };
    wasm.Module = new Proxy(WebAssembly.Module, {
      construct(target, args) {
        compiles++;
        return Reflect.construct(target, args);
      },
    });
  }
  return () => compiles;
}
