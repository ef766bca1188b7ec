import { assert } from "../assert.ts";
import { trimNativeHeap } from "../../lib/local/native_heap.ts";

Deno.test("trimNativeHeap: trims on Linux with glibc, and is a no-op elsewhere", () => {
  const glibc = Deno.build.os === "linux" &&
    [
      "/lib/x86_64-linux-gnu/libc.so.6",
      "/lib/aarch64-linux-gnu/libc.so.6",
      "/usr/lib64/libc.so.6",
    ].some((p) => {
      try {
        return Deno.statSync(p).isFile;
      } catch {
        return false;
      }
    });
  assert.equal(trimNativeHeap(), glibc);
  assert.equal(trimNativeHeap(), glibc, "a second trim works as the first");
});
