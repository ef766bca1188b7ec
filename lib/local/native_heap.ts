/**
 * Hands freed native memory back to the operating system after each training step.
 *
 * Deno allocates array buffers (requests, responses, host copies of tensors) with the C
 * allocator. glibc keeps freed memory in its heaps for reuse and gives it back only when the
 * top of a heap is free, so after a step of many large, short-lived buffers the process kept
 * 94–132 MiB of resident memory in glibc's main heap, swinging by up to 35 MiB from step to step
 * (`bench/results/soak_no_trim.json`); with `malloc_trim(0)` after each step it held 47–62 MiB
 * over 100 steps, without swings (`bench/results/soak.json`, docs/local-memory.md). A trim took
 * 2–12 ms when timed by hand; a step takes seconds.
 *
 * Elsewhere (not glibc, or no FFI permission) trimming is skipped: nothing else depends on it.
 *
 * @module
 */

type Trimmer = { symbols: { malloc_trim: (pad: bigint) => number } };

let trimmer: Trimmer | null | undefined;

function open(): Trimmer | null {
  if (Deno.build.os !== "linux") return null;
  try {
    return Deno.dlopen("libc.so.6", { malloc_trim: { parameters: ["usize"], result: "i32" } });
  } catch {
    // musl has no malloc_trim; a sandbox may deny FFI. Either way there is nothing to do.
    return null;
  }
}

/**
 * Returns glibc's free native memory to the OS (`malloc_trim(0)`). Returns false where that is
 * not available (not Linux with glibc, or no FFI permission).
 *
 * @example
 * await learner.optimStep(adam);
 * trimNativeHeap();
 */
export function trimNativeHeap(): boolean {
  if (trimmer === undefined) trimmer = open();
  if (trimmer === null) return false;
  trimmer.symbols.malloc_trim(0n);
  return true;
}
