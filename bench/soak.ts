/**
 * Memory soak: the OpenClaw seed's `combine` command (batch 16, `--prm-m 1`, `--w-opd 1.0
 * --w-rl 1.0`) with `train_epochs 2` on the default model, run for many steps against an
 * in-process local backend, recording the process's resident memory and jax-js's heap after
 * every step. The design goal (lib/local/heap.ts, train/step.ts) is that memory stops
 * growing once every shape has been seen: resident memory after step 100 must be within 10 %
 * of after step 10.
 *
 * @module
 */

import { join } from "node:path";
import { startLocalServer } from "../lib/local/server/mod.ts";
import { heapBytes } from "../lib/local/heap.ts";
import { ServiceClient } from "../lib/tinker/mod.ts";
import { loadTrainConfig } from "../lib/config/mod.ts";
import { trainRL } from "../lib/trainer/rl.ts";

/** The seed command's settings, as flags. */
export const SOAK_FLAGS = {
  method: "combine",
  "prm-m": "1",
  "batch-size": "16",
  "w-opd": "1.0",
  "w-rl": "1.0",
  "train-epochs": "2",
} as const;

/** Resident memory and heap after one step. */
export interface SoakStep {
  step: number;
  rss_mib: number;
  heap_mib: number;
  step_s: number;
  datums: number;
}

/**
 * Runs `steps` steps (default 100); `log` gets one line per step. Memory after the last step is
 * compared with memory after step 10, or after half the steps in a shorter run (the first steps
 * still meet new shapes, so the reference must come after them).
 */
export async function benchSoak(log: (msg: string) => void, steps = 100) {
  if (steps < 4) throw new Error("the soak needs at least 4 steps");
  const reference = Math.min(10, Math.floor(steps / 2));
  const dataDir = await Deno.makeTempDir({ prefix: "tb-bench-soak-" });
  const server = await startLocalServer({ dataDir });
  const mib = (b: number) => Math.round(b / 2 ** 20);
  const rows: SoakStep[] = [];
  try {
    const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
    const config = await loadTrainConfig({
      flags: { ...SOAK_FLAGS, "max-steps": String(steps), "log-path": join(dataDir, "run") },
    });
    await trainRL({
      config,
      service,
      logDir: join(dataDir, "run"),
      onStep: (m) => {
        const row = {
          step: m.step,
          rss_mib: mib(Deno.memoryUsage().rss),
          heap_mib: mib(heapBytes()),
          step_s: Math.round(m["time/step"]),
          datums: m["train/datums"],
        };
        rows.push(row);
        log(
          `soak step ${row.step}: rss ${row.rss_mib} MiB, heap ${row.heap_mib} MiB, ${row.step_s} s`,
        );
      },
    });
    service.close();
  } finally {
    await server.close();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
  const ref = rows.find((r) => r.step === reference)!;
  const last = rows.at(-1)!;
  return {
    command: `deno task train ${
      Object.entries(SOAK_FLAGS).map(([k, v]) => `--${k} ${v}`).join(" ")
    } --max-steps ${steps}`,
    model: "local/games (the default)",
    steps,
    reference_step: reference,
    rss_reference_mib: ref.rss_mib,
    rss_last_mib: last.rss_mib,
    rss_growth: last.rss_mib / ref.rss_mib - 1,
    within_10_percent: last.rss_mib <= 1.1 * ref.rss_mib,
    heap_reference_mib: ref.heap_mib,
    heap_last_mib: last.heap_mib,
    per_step: rows,
  };
}
