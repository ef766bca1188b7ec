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
import { defaultSamplerEngine } from "../lib/local/sampler/mod.ts";
import { heapBytes } from "../lib/local/heap.ts";
import { ServiceClient } from "../lib/tinker/mod.ts";
import { loadTrainConfig } from "../lib/config/mod.ts";
import { train } from "../lib/train/mod.ts";
import { METRIC } from "../lib/rundir/mod.ts";
import { type ResidentBreakdown, residentNow, watchCompiles } from "./resident.ts";

/** The seed command's settings, as flags. */
export const SOAK_FLAGS = {
  method: "combine",
  "prm-m": "1",
  "batch-size": "16",
  "w-opd": "1.0",
  "w-rl": "1.0",
  "train-epochs": "2",
  // It measures memory over many steps, not learning: the worse-teacher rule, which stops such a
  // run on the local models at step 3, is off.
  "scoring.worse-teacher-steps": "0",
} as const;

/** Resident memory and heap after one step. */
export interface SoakStep {
  step: number;
  rss_mib: number;
  heap_mib: number;
  /** V8's JavaScript heap in use (RSS = wasm heap + this + code, buffers, allocator slack). */
  js_heap_mib: number;
  step_s: number;
  datums: number;
  /** Wasm modules compiled so far (one per distinct jax-js kernel). */
  kernels_compiled: number;
  /** Where the resident memory is (Linux only; zeros elsewhere). */
  resident: ResidentBreakdown;
}

/**
 * Runs `steps` steps (default 100); `log` gets one line per step. Memory after the last step is
 * compared with memory after step 10, or after half the steps in a shorter run (the first steps
 * still meet new shapes, so the reference must come after them).
 */
export async function benchSoak(log: (msg: string) => void, steps = 100) {
  if (steps < 4) throw new Error("the soak needs at least 4 steps");
  const reference = Math.min(10, Math.floor(steps / 2));
  const kernels = watchCompiles();
  const dataDir = await Deno.makeTempDir({ prefix: "tb-bench-soak-" });
  const server = await startLocalServer({ dataDir });
  const mib = (b: number) => Math.round(b / 2 ** 20);
  const rows: SoakStep[] = [];
  let model = "";
  try {
    const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
    const config = await loadTrainConfig({
      flags: { ...SOAK_FLAGS, "max-steps": String(steps), "log-path": join(dataDir, "run") },
    });
    model = config.policy.model;
    await train(config, {
      service,
      logDir: join(dataDir, "run"),
      onStep: (m) => {
        // A full collection first (when `deno task bench` exposes it), so a reading is what the
        // process retains, not where V8's garbage-collection cycle happens to be (±10 % of RSS).
        (globalThis as { gc?: () => void }).gc?.();
        const usage = Deno.memoryUsage();
        const row = {
          step: m.step,
          rss_mib: mib(usage.rss),
          heap_mib: mib(heapBytes()),
          js_heap_mib: mib(usage.heapUsed),
          step_s: Math.round(m[METRIC.stepTime]),
          datums: m[METRIC.datums],
          kernels_compiled: kernels(),
          resident: residentNow(heapBytes()),
        };
        rows.push(row);
        log(
          `soak step ${row.step}: rss ${row.rss_mib} MiB, heap ${row.heap_mib} MiB, ` +
            `js heap ${row.js_heap_mib} MiB, ${row.kernels_compiled} kernels, ${row.step_s} s ` +
            `(resident: ${Object.entries(row.resident).map(([k, v]) => `${k} ${v}`).join(", ")})`,
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
  // The medians of five steps around the reference and of the last five are reported beside the
  // single readings, in case a run could not collect garbage before each reading.
  const medianRss = (rs: SoakStep[]) => {
    const xs = rs.map((r) => r.rss_mib).sort((a, b) => a - b);
    return xs[Math.floor(xs.length / 2)];
  };
  const refWindow = medianRss(rows.filter((r) => Math.abs(r.step - reference) <= 2));
  const lastWindow = medianRss(rows.slice(-5));
  return {
    command: `deno task train ${
      Object.entries(SOAK_FLAGS).map(([k, v]) => `--${k} ${v}`).join(" ")
    } --max-steps ${steps}`,
    model: `${model} (the default)`,
    prefix_cache_mib: server.backend.options.prefixCacheBytes / 2 ** 20,
    sampler_engine: defaultSamplerEngine(),
    full_gc_before_each_reading: typeof (globalThis as { gc?: unknown }).gc === "function",
    steps,
    reference_step: reference,
    rss_reference_mib: ref.rss_mib,
    rss_last_mib: last.rss_mib,
    rss_growth: last.rss_mib / ref.rss_mib - 1,
    within_10_percent: last.rss_mib <= 1.1 * ref.rss_mib,
    rss_reference_median5_mib: refWindow,
    rss_last_median5_mib: lastWindow,
    rss_growth_median5: lastWindow / refWindow - 1,
    heap_reference_mib: ref.heap_mib,
    heap_last_mib: last.heap_mib,
    resident_reference: ref.resident,
    resident_last: last.resident,
    kernels_compiled_reference: ref.kernels_compiled,
    kernels_compiled_last: last.kernels_compiled,
    per_step: rows,
  };
}
