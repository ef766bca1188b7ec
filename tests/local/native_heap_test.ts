import { assert } from "../assert.ts";
import { trimNativeHeap } from "../../lib/local/native_heap.ts";

Deno.test("trimNativeHeap: trims on Linux with glibc, and is a no-op elsewhere", () => {
  // A deno built for *-linux-gnu runs on glibc, which has malloc_trim.
  const glibc = Deno.build.os === "linux" && Deno.build.target.endsWith("-linux-gnu");
  assert.equal(trimNativeHeap(), glibc);
  assert.equal(trimNativeHeap(), glibc, "a second trim works as the first");
});
