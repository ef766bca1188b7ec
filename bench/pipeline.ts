/**
 * `deno task bench pipeline`: the trainer's execution modes side by side on one fixed RL
 * workload against the local backend with injected latency (150 ms per call, as the cloud adds).
 * Rounds alternate the arms' order, since the machine is noisy; the load average is recorded.
 *
 * Two measures per arm:
 * - **the step loop** (the headline): episodes per second and the share of time the training
 *   service is busy (the steps' `train` spans, from the first forward_backward sent to the new
 *   sampler) over steps 2…N, from the end of step 1 to the end of the last step. Step 1 is left
 *   out because it holds the learner's compilation and, in `async`, the pipeline filling: both
 *   are once per run, not per step.
 * - **the whole run**: the same over `train()`'s wall time, set-up and final checkpoint
 *   included (the held-out evaluation is off: it is the same in every arm and no part of the
 *   pipeline).
 *
 * Each arm also gets a per-step breakdown from its spans: rollout, score and train time, the
 * loop's gap between one step's end and the next step's start (recording), forward_backward
 * calls, and how far apart a step's groups arrived (what `stream` can overlap). Last, the
 * local learner's cost of a step's datums as one forward_backward and as `stream`'s split
 * (learnerCallCost): the part of a `stream` step that latency does not explain.
 *
 * The arms run with the backend embedded in the trainer's process (the headline, as a local run
 * has it), then sync and async again with the backend in a process of its own (`own_process`):
 * there a step's compute on the backend no longer holds up the trainer's thread, nor the
 * trainer's work the backend's timers.
 *
 * What the client sends is counted on the wire (wireCounter): the most training submissions
 * in flight at once, and sample and retrieve_future requests per step.
 */

import { loadTrainConfig } from "../lib/config/mod.ts";
import { startLocalServer } from "../lib/local/server/mod.ts";
import { startServerProcess } from "../lib/http/mod.ts";
import { ServiceClient } from "../lib/tinker/mod.ts";
import { train } from "../lib/train/mod.ts";
import { METRIC, readJsonl, runPath } from "../lib/rundir/mod.ts";
import type { TimingSpan } from "../lib/viz/mod.ts";
import { Learner, type LearnerDatum } from "../lib/local/train/mod.ts";
import { findLocalModel, loadBaseWeights } from "../lib/local/models.ts";
import { LoraSpecSchema } from "../lib/local/model/config.ts";
import { Rng } from "../lib/util/random.ts";

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

/**
 * The step loop's measures from a run's spans: over steps 2…N (see the module's doc), episodes
 * per second and the service's busy share; per step, the mean rollout, score and train time,
 * the loop's gap between steps, minibatches (score spans), the forward_backward calls they
 * went out in (the update joins minibatches queued behind a call), and the spread of a step's
 * group arrivals (first to last score span start).
 */
export function stepLoopMeasures(
  spans: TimingSpan[],
  episodesPerStep: number,
): Record<string, number> {
  const steps = [...new Set(spans.map((s) => s.step))].sort((a, b) => a - b);
  const of = (step: number, name: string | RegExp) =>
    spans.filter((s) =>
      s.step === step && (typeof name === "string" ? s.name === name : name.test(s.name))
    );
  const total = (xs: TimingSpan[]) => xs.reduce((a, s) => a + s.end - s.start, 0);
  const stepSpan = (step: number) => of(step, "step")[0];
  const later = steps.slice(1);
  if (later.length === 0) throw new Error("pipeline bench: the step loop needs 2 steps or more");
  const wall = stepSpan(steps.at(-1)!).end - stepSpan(steps[0]).end;
  const mean = (f: (step: number) => number) =>
    later.reduce((a, st) => a + f(st), 0) / later.length;
  return {
    loop_wall_s: wall / 1000,
    loop_episodes_per_s: (episodesPerStep * later.length) / (wall / 1000),
    loop_service_busy_frac: later.reduce((a, st) => a + total(of(st, "train")), 0) / wall,
    step_ms: wall / later.length,
    rollout_ms: mean((st) => {
      // async groups play before their step starts: their own spans, merged per step.
      const r = of(st, /^rollout/);
      return r.length ? Math.max(...r.map((x) => x.end)) - Math.min(...r.map((x) => x.start)) : 0;
    }),
    score_ms: mean((st) => total(of(st, "score"))),
    train_ms: mean((st) => total(of(st, "train"))),
    gap_ms: mean((st) => stepSpan(st).start - stepSpan(steps[steps.indexOf(st) - 1]).end),
    minibatches: mean((st) => of(st, "score").length),
    forward_backward_calls: mean((st) => of(st, "forward_backward").length),
    group_arrival_spread_ms: mean((st) => {
      const starts = of(st, "score").map((x) => x.start);
      return Math.max(...starts) - Math.min(...starts);
    }),
  };
}

/** A step's training submissions: each is a POST answered with a future. */
const TRAINING_SUBMITS = /\/api\/v1\/(forward_backward|optim_step|save_weights_for_sampler)$/;

/**
 * A `fetch` that counts what the client sends: requests by endpoint, and the most training
 * submissions in flight at once (1 when each waits for the previous one's acceptance; a
 * step's forward_backward, optim_step and sampler save sent together make 3).
 */
export function wireCounter(): {
  fetch: typeof fetch;
  requests: Record<string, number>;
  submitsInFlightMax: () => number;
} {
  const requests: Record<string, number> = {};
  let inFlight = 0, most = 0;
  const counting: typeof fetch = async (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    const endpoint = url.split("/api/v1/")[1] ?? url;
    requests[endpoint] = (requests[endpoint] ?? 0) + 1;
    if (!TRAINING_SUBMITS.test(url)) return await fetch(input, init);
    most = Math.max(most, ++inFlight);
    try {
      return await fetch(input, init);
    } finally {
      inFlight--;
    }
  };
  return { fetch: counting, requests, submitsInFlightMax: () => most };
}

/**
 * The local backend with the bench's latency: embedded in the trainer's process (as a run
 * without TINKER_API_KEY has it), or in a process of its own (`deno task serve`, as a service
 * is): then the trainer's work and the backend's do not share one thread.
 */
async function startBackend(
  ownProcess: boolean,
): Promise<{ url: string; close(): Promise<unknown> }> {
  const b = PIPELINE_BENCH;
  const dataDir = await Deno.makeTempDir({ prefix: "tb-bench-pipe-" });
  const faults = { latencyMs: [b.latencyMs, b.latencyMs] as [number, number] };
  if (!ownProcess) {
    const server = await startLocalServer({ dataDir, faults });
    return { url: server.url, close: () => server.close() };
  }
  const child = await startServerProcess({
    script: new URL("../scripts/serve.ts", import.meta.url).pathname,
    args: ["--port", "0", "--data-dir", dataDir, "--faults", JSON.stringify(faults)],
  });
  return { url: child.listening, close: () => child.stop() };
}

/** One arm's run: the step loop's measures, and the whole run's. */
async function runArm(arm: string, ownProcess = false): Promise<Record<string, number>> {
  const b = PIPELINE_BENCH;
  const load = Deno.loadavg()[0];
  const server = await startBackend(ownProcess);
  const wire = wireCounter();
  const service = await ServiceClient.connect({
    baseUrl: server.url,
    apiKey: "tml-local",
    fetch: wire.fetch,
  });
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
        "eval.episodes": 0,
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
      ...stepLoopMeasures(spans, b.groupsPerBatch * b.groupSize),
      wall_s: wall,
      episodes,
      episodes_per_s: episodes / wall,
      service_busy_frac: trainMs / 1000 / wall,
      off_policy_max: Math.max(...run.history.map((m) => m["async/off_policy_max"] ?? 0)),
      requeued: run.history.reduce((a, m) => a + (m["async/requeued"] ?? 0), 0),
      final_reward: run.history.at(-1)![METRIC.reward],
      submits_in_flight_max: wire.submitsInFlightMax(),
      // Per step over the whole run (set-up and final checkpoint are a few requests).
      sample_requests_per_step: (wire.requests.asample ?? 0) / b.steps,
      retrieve_future_per_step: (wire.requests.retrieve_future ?? 0) / b.steps,
      load_avg_1m: (load + Deno.loadavg()[0]) / 2,
    };
  } finally {
    service.close();
    await server.close();
  }
}

/**
 * What a step's forward_backward costs the local learner as one call (sync, async) and as
 * `num_minibatches` calls over the same datums (stream), each followed by the optim_step,
 * side by side in alternating order: the workload's model and LoRA rank, one datum per episode
 * of `tokens` tokens (about a prompt and a reply of this task), cross-entropy.
 */
export async function learnerCallCost(
  { tokens = 40, reps = 6, warmup = 2 } = {},
): Promise<Record<string, number | number[]>> {
  const b = PIPELINE_BENCH;
  const parts = ARMS.stream.num_minibatches as number;
  const spec = findLocalModel(b.model)!;
  const learner = await Learner.create({
    config: spec.config,
    base: await loadBaseWeights(spec),
    lora: LoraSpecSchema.parse({ rank: 4 }),
  });
  const rng = new Rng(0);
  const datums: LearnerDatum[] = Array.from({ length: b.groupsPerBatch * b.groupSize }, () => {
    const toks = Int32Array.from({ length: tokens + 1 }, () => rng.int(spec.config.vocabSize));
    return {
      tokens: toks.slice(0, -1),
      inputs: {
        target_tokens: { shape: [tokens], data: toks.slice(1) },
        weights: { shape: [tokens], data: new Float32Array(tokens).fill(1) },
      },
    };
  });
  const size = Math.ceil(datums.length / parts);
  const timed = async (calls: LearnerDatum[][]) => {
    const t0 = performance.now();
    for (const c of calls) await learner.forwardBackward(c, "cross_entropy", {});
    await learner.optimStep({ learning_rate: 1e-4 });
    return performance.now() - t0;
  };
  const split = Array.from({ length: parts }, (_, i) => datums.slice(i * size, (i + 1) * size))
    .filter((c) => c.length > 0);
  const one: number[] = [], many: number[] = [];
  const load = Deno.loadavg()[0];
  try {
    for (let i = 0; i < warmup + reps; i++) {
      // Alternating which goes first, since the machine is noisy.
      let a: number, m: number;
      if (i % 2 === 0) {
        a = await timed([datums]);
        m = await timed(split);
      } else {
        m = await timed(split);
        a = await timed([datums]);
      }
      if (i < warmup) continue;
      one.push(a);
      many.push(m);
    }
  } finally {
    learner.dispose();
  }
  return {
    datums: datums.length,
    tokens_per_datum: tokens,
    calls: split.length,
    one_call_ms: median(one),
    split_calls_ms: median(many),
    split_vs_one: median(many.map((m, i) => m / one[i])),
    one_call_all_ms: one,
    split_calls_all_ms: many,
    load_avg_1m: (load + Deno.loadavg()[0]) / 2,
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b), m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** `names`' arms, `rounds` times in alternating order: every run, medians and ratios to sync. */
async function runRounds(
  names: string[],
  ownProcess: boolean,
  log: (m: string) => void,
): Promise<{ summary: object; runs: Record<string, Record<string, number>[]> }> {
  const runs: Record<string, Record<string, number>[]> = Object.fromEntries(
    names.map((n) => [n, []]),
  );
  const where = ownProcess ? " (backend in its own process)" : "";
  for (let round = 0; round < PIPELINE_BENCH.rounds; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const arm of order) {
      log(`pipeline round ${round + 1}: ${arm}${where}`);
      const r = await runArm(arm, ownProcess);
      log(
        `  step loop ${r.loop_episodes_per_s.toFixed(2)} episodes/s, service busy ${
          (100 * r.loop_service_busy_frac).toFixed(0)
        } %; whole run ${r.episodes_per_s.toFixed(2)} episodes/s; rollout ${
          r.rollout_ms.toFixed(0)
        } ms, train ${r.train_ms.toFixed(0)} ms; off-policy max ${r.off_policy_max}; load ${
          r.load_avg_1m.toFixed(1)
        }`,
      );
      runs[arm].push(r);
    }
  }
  // Ratios within a round (measured minutes apart) are steadier than ratios of medians.
  const vsSync = (n: string, k: string) => runs[n].map((r, i) => r[k] / runs.sync[i][k]);
  const keys = Object.keys(runs.sync[0]);
  const summary = Object.fromEntries(names.map((n) => [n, {
    ...Object.fromEntries(keys.map((k) => [k, median(runs[n].map((r) => r[k]))])),
    loop_vs_sync_per_round: vsSync(n, "loop_episodes_per_s"),
    loop_vs_sync: median(vsSync(n, "loop_episodes_per_s")),
    vs_sync_per_round: vsSync(n, "episodes_per_s"),
    vs_sync: median(vsSync(n, "episodes_per_s")),
  }]));
  return { summary, runs };
}

/**
 * Every arm, `rounds` times in alternating order, with the backend embedded (the headline:
 * `summary`); then sync and async with the backend in its own process (`own_process`); last,
 * the learner's cost of one call against stream's split.
 */
export async function runPipelineBench(log: (m: string) => void): Promise<object> {
  const embedded = await runRounds(Object.keys(ARMS), false, log);
  const own = await runRounds(["sync", "async"], true, log);
  log("pipeline: the learner's cost of one forward_backward vs the stream arm's split");
  const learnerCalls = await learnerCallCost();
  log(
    `  one call ${
      (learnerCalls.one_call_ms as number).toFixed(0)
    } ms, ${learnerCalls.calls} calls ${(learnerCalls.split_calls_ms as number).toFixed(0)} ms`,
  );
  return {
    workload: PIPELINE_BENCH,
    arms: ARMS,
    summary: embedded.summary,
    own_process: own.summary,
    learner_calls: learnerCalls,
    runs: embedded.runs,
    own_process_runs: own.runs,
  };
}
