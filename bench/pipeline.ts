/**
 * `deno task bench pipeline`: the trainer's execution modes side by side on one fixed RL
 * workload against the local backend with injected latency (150 ms per call, as the cloud adds):
 * episodes per second, and the share of wall time the training service is busy (the sum of the
 * steps' `train` spans, from the first forward_backward sent to the new sampler, over the run's
 * wall time). Rounds alternate the arms' order, since the machine is noisy.
 */

import { loadTrainConfig } from "../lib/config/mod.ts";
import { startLocalServer } from "../lib/local/server/mod.ts";
import { ServiceClient } from "../lib/tinker/mod.ts";
import { train } from "../lib/train/mod.ts";
import { METRIC, readJsonl, runPath } from "../lib/rundir/mod.ts";
import type { TimingSpan } from "../lib/viz/mod.ts";

/** The fixed workload. */
export const PIPELINE_BENCH = {
  model: "local/tiny",
  steps: 8,
  groupsPerBatch: 4,
  groupSize: 8,
  maxTokens: 16,
  latencyMs: 150,
  rounds: 2,
};

const ARMS: Record<string, Record<string, unknown>> = {
  sync: { execution: "sync" },
  stream: { execution: "stream", num_minibatches: 4 },
  async: { execution: "async", max_steps_off_policy: 1 },
};

/** One arm's run: wall time, episodes, and how busy training kept the service. */
async function runArm(arm: string): Promise<Record<string, number>> {
  const b = PIPELINE_BENCH;
  const server = await startLocalServer({
    dataDir: await Deno.makeTempDir({ prefix: "tb-bench-pipe-" }),
    faults: { latencyMs: [b.latencyMs, b.latencyMs] },
  });
  const service = await ServiceClient.connect({ baseUrl: server.url, apiKey: "tml-local" });
  const logDir = await Deno.makeTempDir({ prefix: `tb-bench-pipe-${arm}-` });
  try {
    const config = await loadTrainConfig({
      flags: {
        model_name: b.model,
        env_id: "debug:EvenFirstByte-v0",
        max_steps: b.steps,
        batch_size: b.groupsPerBatch,
        group_size: b.groupSize,
        max_tokens: b.maxTokens,
        learning_rate: 1e-2,
        lora_rank: 4,
        save_every: 0,
        seed: 1,
        ...ARMS[arm],
      },
    });
    const t0 = performance.now();
    const run = await train(config, { service, logDir });
    const wall = (performance.now() - t0) / 1000;
    const spans = (await readJsonl(runPath(logDir, "spans"))) as TimingSpan[];
    const trainMs = spans.filter((s) => s.name === "train").reduce(
      (a, s) => a + s.end - s.start,
      0,
    );
    const episodes = run.history.reduce((a, m) => a + m[METRIC.totalEpisodes], 0);
    return {
      wall_s: wall,
      episodes,
      episodes_per_s: episodes / wall,
      service_busy_frac: trainMs / 1000 / wall,
      off_policy_max: Math.max(...run.history.map((m) => m["async/off_policy_max"] ?? 0)),
      requeued: run.history.reduce((a, m) => a + (m["async/requeued"] ?? 0), 0),
      final_reward: run.history.at(-1)![METRIC.reward],
    };
  } finally {
    service.close();
    await server.close();
  }
}

/** Every arm, `rounds` times in alternating order; medians and ratios to sync. */
export async function runPipelineBench(log: (m: string) => void): Promise<object> {
  const names = Object.keys(ARMS);
  const runs: Record<string, Record<string, number>[]> = Object.fromEntries(
    names.map((n) => [n, []]),
  );
  for (let round = 0; round < PIPELINE_BENCH.rounds; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const arm of order) {
      log(`pipeline round ${round + 1}: ${arm}`);
      const r = await runArm(arm);
      log(
        `  ${r.episodes_per_s.toFixed(2)} episodes/s, service busy ${
          (100 * r.service_busy_frac).toFixed(0)
        } %, off-policy max ${r.off_policy_max}`,
      );
      runs[arm].push(r);
    }
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b), m = Math.floor(s.length / 2);
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
  };
  const summary = Object.fromEntries(names.map((n) => [n, {
    episodes_per_s: median(runs[n].map((r) => r.episodes_per_s)),
    service_busy_frac: median(runs[n].map((r) => r.service_busy_frac)),
  }]));
  // Ratios within a round (measured minutes apart) are steadier than ratios of medians.
  const vsSync = (n: string) =>
    runs[n].map((r, i) => r.episodes_per_s / runs.sync[i].episodes_per_s);
  return {
    workload: PIPELINE_BENCH,
    arms: ARMS,
    summary: Object.fromEntries(
      names.map((
        n,
      ) => [n, { ...summary[n], vs_sync_per_round: vsSync(n), vs_sync: median(vsSync(n)) }]),
    ),
    runs,
  };
}
