/**
 * The engine, client and server bench suites in their smoke size (./smoke_harness.ts). The
 * suites that train whole runs are in ./smoke_training_test.ts, a file of their own so that
 * `deno test --parallel` runs the two halves side by side. `learning` is in neither: its smoke
 * run is two trainers on local/games2 for two steps each, about 3 minutes on its own; run it
 * by hand with `deno task bench learning --smoke`.
 */

import { runSmoke } from "./smoke_harness.ts";

Deno.test("bench: the engine, client and server suites run in their smoke size and write their results", async () => {
  await runSmoke([
    "client",
    "rollout",
    "pipeline",
    "openreward",
    "proxy",
    "http",
    "learner_long",
    "rl_step",
    "local_engine",
    "long_prompt",
    "unseen_tools",
  ]);
});
