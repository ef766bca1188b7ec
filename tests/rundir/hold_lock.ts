/**
 * A fixture of lock_test.ts: takes a run directory's lock (`Deno.args[0]`), prints `locked`,
 * and ends normally once its stdin closes (so its exit handler releases the lock).
 *
 * @module
 */

import { lockRunDir } from "../../lib/rundir/mod.ts";

await lockRunDir(Deno.args[0]);
console.log("locked");
for await (const _ of Deno.stdin.readable) {
  // waits for the test to close stdin
}
