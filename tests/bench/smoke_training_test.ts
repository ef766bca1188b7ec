/**
 * The bench suites that train whole runs (`soak`, `viewer`, `examples`) in their smoke size
 * (./smoke_harness.ts); the others are in ./smoke_test.ts.
 */

import { runSmoke } from "./smoke_harness.ts";

Deno.test("bench: the training suites (soak, viewer, examples) run in their smoke size and write their results", async () => {
  await runSmoke(["soak", "viewer", "examples"]);
});
