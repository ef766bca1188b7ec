import { assert } from "../assert.ts";
import { parseSmaps, residentBreakdown } from "../../bench/resident.ts";

const SMAPS = `561b04bf2000-561b088e6000 r-xp 01b8e000 fe:00 5308723    /opt/deno
Size:              62416 kB
Rss:               32768 kB
561b47816000-561b513fc000 rw-p 00000000 00:00 0                          [heap]
Size:             159640 kB
Rss:              159232 kB
7f8f14000000-7f8f494a0000 rw-p 00000000 00:00 0 
Size:             873088 kB
Rss:              871424 kB
7f9040000000-7f905fdc0000 rwxp 00000000 00:00 0 
Size:             522000 kB
Rss:                5120 kB
7f9074000000-7f9074eb2000 rw-p 00000000 00:00 0 
Size:              15048 kB
Rss:               15360 kB
`;

Deno.test("residentBreakdown: the wasm heap by its size, malloc's heap, code, and the rest", () => {
  const maps = parseSmaps(SMAPS);
  assert.deepEqual(maps.length, 5);
  assert.deepEqual(residentBreakdown(maps, 873088 * 1024), {
    wasm_heap_mib: 851,
    malloc_heap_mib: 156,
    code_mib: 37,
    other_anon_mib: 15,
  });
  // Without a wasm heap of that size, its mapping is just more anonymous memory.
  assert.deepEqual(residentBreakdown(maps, 0).other_anon_mib, 851 + 15);
});
