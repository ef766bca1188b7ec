/**
 * `deno task bench`: runs the benchmarks and writes `bench/results/<name>.json`.
 *
 * Timings on these 2-core VMs vary by ±40 % between runs, so every comparison is a ratio of
 * two measurements taken side by side in one run, alternating rounds.
 */

import {
  BENCH,
  median,
  runTorchReference,
  timeNewVersion,
  timeOurSampling,
  timeOurTrainStep,
} from "./local_engine.ts";
import { initEngine } from "../lib/local/engine.ts";
import { benchCodec, benchPipelining, codecTable } from "./client.ts";
import { benchRollout } from "./rollout.ts";
import { runLearningBench } from "./learning.ts";
import { runPipelineBench } from "./pipeline.ts";
import { benchOpenReward } from "./openreward.ts";
import { apiTable, benchProxy } from "./proxy.ts";
import { benchSoak } from "./soak.ts";
import { benchViewer } from "./viewer.ts";
import { benchExamples } from "./examples.ts";
import { benchHttp, httpTable } from "./http.ts";
import { benchRlStep } from "./rl_step.ts";
import { benchLongPrompt } from "./long_prompt.ts";
import { benchLearnerLong } from "./learner_long.ts";

import { helpText, wantsHelp } from "../lib/cli/args.ts";
import {
  applySmokeSizes,
  SMOKE_EXAMPLE_ARGS,
  SMOKE_LEARNING,
  SMOKE_ROUNDS,
  SMOKE_SOAK_STEPS,
} from "./smoke.ts";
import { EXAMPLES, runExample } from "./examples.ts";

/** `--smoke`: one small round of each suite named, results in a temporary directory (smoke.ts). */
const SMOKE = Deno.args.includes("--smoke");
const ROUNDS = SMOKE ? SMOKE_ROUNDS : 2;
const log = (msg: string) => console.error(`[bench] ${msg}`);
const SUITES = ["local_engine", "client", "rollout", "pipeline", "openreward", "proxy", "http"];
/**
 * Suites that only run when named: `learning` trains for about 35 minutes (arms in parallel);
 * `soak` runs 100 steps of the OpenClaw seed's `combine` (`--soak-steps N` for fewer); `viewer`
 * needs Chromium (bench/viewer.ts); `examples` trains every shipped example for a few minutes each;
 * `rl_step` measures what
 * one RL step does to `local/tools` on the tool game; `long_prompt` samples and trains `local/long`
 * on a 55k-token agent prompt (minutes on a loaded machine); `learner_long` trains the learner alone
 * on one 55k-token turn.
 */
const NAMED_ONLY = [
  "learning",
  "soak",
  "viewer",
  "examples",
  "rl_step",
  "long_prompt",
  "learner_long",
];
const CLI = {
  run: "deno task bench",
  about: "Runs the benchmarks (all default suites, or those named) and writes each suite's " +
    "results to bench/results/<suite>.json; timings are ratios of runs taken side by side.",
  usage: `usage: deno task bench [suite ...] [--soak-steps 100] [--smoke]
  suites: ${SUITES.join(", ")} (the default set); ${NAMED_ONLY.join(", ")} only when named
  --smoke runs one small round of each suite named (all of them when none is), writing to a
  temporary directory instead of bench/results/: CI runs it so that a broken bench fails there.`,
};
if (wantsHelp(Deno.args)) {
  console.log(helpText(CLI));
  Deno.exit(0);
}
/** A usage mistake: one `error:` line and the hint, exit 2. */
function usageError(message: string): never {
  console.error(`error: ${message}\n(see ${CLI.run} --help)`);
  Deno.exit(2);
}
const soakFlag = Deno.args.findIndex((a) => a === "--soak-steps" || a.startsWith("--soak-steps="));
const soakSteps = soakFlag < 0 ? 100 : Number(
  Deno.args[soakFlag].includes("=") ? Deno.args[soakFlag].split("=")[1] : Deno.args[soakFlag + 1],
);
const names = Deno.args.filter((a, i) =>
  a !== "--smoke" &&
  (soakFlag < 0 || (i !== soakFlag && (i !== soakFlag + 1 || Deno.args[soakFlag].includes("="))))
);
if (!Number.isInteger(soakSteps) || soakSteps < 4) {
  usageError(
    "--soak-steps: an integer >= 4 (memory at the end is compared with step 10, or half way)",
  );
}
const only = names.length ? names : SMOKE ? [...SUITES, ...NAMED_ONLY] : SUITES;
for (const name of only) {
  if (!SUITES.includes(name) && !NAMED_ONLY.includes(name)) {
    usageError(
      `unknown benchmark ${JSON.stringify(name)}; known: ${[...SUITES, ...NAMED_ONLY].join(", ")}`,
    );
  }
}

/** Where results go: bench/results/, or a temporary directory for a smoke run. */
const RESULTS_DIR = SMOKE
  ? `${await Deno.makeTempDir({ prefix: "tb-bench-smoke-" })}/`
  : new URL("./results/", import.meta.url).pathname;
if (SMOKE) {
  applySmokeSizes();
  log(`smoke run: one small round per suite; results in ${RESULTS_DIR}`);
}
// A suite that fails is one line naming it, exit 1 (a smoke run in CI fails with it).
globalThis.addEventListener("unhandledrejection", (e) => {
  e.preventDefault();
  console.error(`error: bench: ${(e.reason as Error)?.message ?? e.reason}`);
  Deno.exit(1);
});
try {
  await runSuites();
} catch (e) {
  console.error(`error: bench: ${(e as Error).message.split("\n")[0]}`);
  Deno.exit(1);
}
Deno.exit(0);

async function runSuites(): Promise<void> {
  /** Each suite's run, by name, in the order they run. */
  const RUNS: Record<string, () => Promise<void>> = {
    client: runClientBench,
    rollout: runRolloutBench,
    pipeline: async () => await writeResult("pipeline", await runPipelineBench(log)),
    openreward: runOpenRewardBench,
    proxy: runProxyBench,
    http: async () => {
      const r = await benchHttp(log);
      await writeResult("http", r);
      console.log(httpTable(r));
    },
    learning: async () =>
      await writeResult("learning", await runLearningBench(log, SMOKE ? SMOKE_LEARNING : {})),
    soak: runSoakBench,
    viewer: async () => await writeResult("viewer", await benchViewer(log)),
    examples: async () =>
      await writeResult(
        "examples",
        SMOKE
          ? {
            examples: [
              await runExample(
                { ...EXAMPLES[0], train: [...EXAMPLES[0].train, ...SMOKE_EXAMPLE_ARGS] },
                log,
              ),
            ],
          }
          : await benchExamples(log),
      ),
    rl_step: async () => await writeResult("rl_step", await benchRlStep(log)),
    long_prompt: async () => await writeResult("long_prompt", await benchLongPrompt(log)),
    learner_long: async () => await writeResult("learner_long", await benchLearnerLong(log)),
    local_engine: runLocalEngineBench,
  };
  await initEngine();
  for (const [name, run] of Object.entries(RUNS)) {
    if (!only.includes(name)) continue;
    const t0 = performance.now();
    try {
      await run();
    } catch (e) {
      throw new Error(`${name}: ${(e as Error).message}`);
    }
    if (SMOKE) log(`${name}: smoke run done in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
}

async function runLocalEngineBench(): Promise<void> {
  const ours = {
    lora: [] as number[],
    full: [] as number[],
    sampling: [] as number[],
    samplingGroup: [] as number[],
    /** The jax-js sampler, the engine before ONNX Runtime, in the same rounds. */
    samplingJax: [] as number[],
    samplingGroupJax: [] as number[],
    firstStep: 0,
  };
  const torch = { lora: [] as number[], full: [] as number[], sampling: [] as number[] };
  const loadAtStart = Deno.loadavg();
  let torchInfo: Record<string, unknown> | undefined;
  let torchError: string | undefined;

  for (let round = 1; round <= ROUNDS; round++) {
    log(`round ${round}/${ROUNDS}: ours, train step (LoRA rank ${BENCH.rank})`);
    const lora = await timeOurTrainStep("lora");
    ours.lora.push(...lora.all_ms);
    ours.firstStep = Math.max(ours.firstStep, round === 1 ? lora.first_step_ms : 0);
    log(`  median ${lora.median_ms.toFixed(0)} ms; full fine-tune`);
    const full = await timeOurTrainStep("full");
    ours.full.push(...full.all_ms);
    for (const engine of ["onnx", "jax"] as const) {
      log(`  sampling on ${engine}`);
      const sampling = await timeOurSampling("distinct", engine);
      (engine === "onnx" ? ours.sampling : ours.samplingJax).push(...sampling.all_tok_s);
      log(
        `  median ${
          sampling.median_tok_s.toFixed(0)
        } tok/s; sampling one prompt x ${BENCH.sampleRows}`,
      );
      const group = await timeOurSampling("group", engine);
      (engine === "onnx" ? ours.samplingGroup : ours.samplingGroupJax).push(...group.all_tok_s);
      log(`  median ${group.median_tok_s.toFixed(0)} tok/s`);
    }
    log(`  PyTorch reference`);
    const ref = SMOKE ? { error: "not run in a smoke run" } : await runTorchReference();
    if ("error" in ref) {
      torchError = String(ref.error);
      log(`  PyTorch unavailable: ${torchError}`);
    } else {
      torchInfo = ref;
      const r = ref as {
        train_lora: { all_ms: number[] };
        train_full: { all_ms: number[] };
        sampling: { all_tok_s: number[] };
      };
      torch.lora.push(...r.train_lora.all_ms);
      torch.full.push(...r.train_full.all_ms);
      torch.sampling.push(...r.sampling.all_tok_s);
      log(`  PyTorch LoRA ${median(r.train_lora.all_ms).toFixed(0)} ms`);
    }
  }

  log("a new sampler version on ONNX Runtime: rebuilt session vs weights as inputs");
  const newVersion = await timeNewVersion(SMOKE ? 1 : undefined);
  const [load1, load5, load15] = Deno.loadavg();
  const row = (ourMs: number[], torchMs: number[]) => ({
    ours: median(ourMs),
    pytorch: torchMs.length ? median(torchMs) : null,
    ratio: torchMs.length ? median(ourMs) / median(torchMs) : null,
  });
  const result = {
    benchmark: "local_engine",
    ...(SMOKE ? { smoke: true } : {}),
    date: new Date().toISOString(),
    machine: { cores: navigator.hardwareConcurrency, deno: Deno.version.deno },
    /** Load averages (1, 5, 15 min) when the run started and ended: the machine is shared. */
    load_average: { start: loadAtStart, end: [load1, load5, load15] },
    sizes: { ...BENCH, config: "vocab 512, d 128, 4 layers, 4 heads, context 128" },
    train_step_lora_ms: row(ours.lora, torch.lora),
    train_step_full_ms: row(ours.full, torch.full),
    first_step_with_compile_ms: ours.firstStep,
    // Sampling is on ONNX Runtime (`ours`); `jax` is the jax-js sampler it replaced, same rounds.
    sampling_tok_s: samplingRow(ours.sampling, ours.samplingJax, torch.sampling),
    // PyTorch prefills a batch in one pass whatever the prompts, so its figure is the same work.
    sampling_group_tok_s: samplingRow(ours.samplingGroup, ours.samplingGroupJax, torch.sampling),
    new_sampler_version: newVersion,
    pytorch: torchInfo ? torchInfo.engine : torchError,
    raw: { ours, pytorch: torch },
  };
  function samplingRow(onnx: number[], jax: number[], pytorch: number[]) {
    return {
      ours: median(onnx),
      jax: median(jax),
      pytorch: pytorch.length ? median(pytorch) : null,
      // For throughput, higher is better: report ours/PyTorch so > 1 means faster.
      ratio: pytorch.length ? median(onnx) / median(pytorch) : null,
      jax_ratio: pytorch.length ? median(jax) / median(pytorch) : null,
      ratio_vs_jax: median(onnx) / median(jax),
    };
  }
  const path = new URL(`file://${RESULTS_DIR}local_engine.json`);
  await Deno.mkdir(RESULTS_DIR, { recursive: true });
  await Deno.writeTextFile(path, JSON.stringify(result, null, 2) + "\n");

  const f = (x: number | null, d = 0) => x === null ? "n/a" : x.toFixed(d);
  console.log(`| measure | ours | PyTorch CPU | ratio |
| --- | --- | --- | --- |
| sampling on jax-js (before), ${BENCH.sampleRows} rows (tok/s) | ${
    f(result.sampling_tok_s.jax)
  } | ${f(result.sampling_tok_s.pytorch)} | ${f(result.sampling_tok_s.jax_ratio, 2)}× |
| sampling on jax-js (before), 1 prompt × ${BENCH.sampleRows} (tok/s) | ${
    f(result.sampling_group_tok_s.jax)
  } | ${f(result.sampling_group_tok_s.pytorch)} | ${f(result.sampling_group_tok_s.jax_ratio, 2)}× |
| train step, LoRA r${BENCH.rank} (ms) | ${f(result.train_step_lora_ms.ours)} | ${
    f(result.train_step_lora_ms.pytorch)
  } | ${f(result.train_step_lora_ms.ratio, 2)}× |
| train step, full (ms) | ${f(result.train_step_full_ms.ours)} | ${
    f(result.train_step_full_ms.pytorch)
  } | ${f(result.train_step_full_ms.ratio, 2)}× |
| sampling, ${BENCH.sampleRows} rows (tok/s) | ${f(result.sampling_tok_s.ours)} | ${
    f(result.sampling_tok_s.pytorch)
  } | ${f(result.sampling_tok_s.ratio, 2)}× |
| sampling, 1 prompt × ${BENCH.sampleRows} samples (tok/s) | ${
    f(result.sampling_group_tok_s.ours)
  } | ${f(result.sampling_group_tok_s.pytorch)} | ${f(result.sampling_group_tok_s.ratio, 2)}× |`);
  console.log(`\nwritten ${path.pathname}`);
}

/** Writes `bench/results/<name>.json`, stamped with the benchmark's name and the date. */
async function writeResult(name: string, result: object): Promise<void> {
  await Deno.mkdir(RESULTS_DIR, { recursive: true });
  const body = {
    benchmark: name,
    date: new Date().toISOString(),
    ...(SMOKE ? { smoke: true } : {}),
    ...result,
  };
  await Deno.writeTextFile(`${RESULTS_DIR}${name}.json`, JSON.stringify(body, null, 2) + "\n");
  log(`wrote ${RESULTS_DIR}${name}.json`);
}

async function runClientBench(): Promise<void> {
  log("client: protobuf codec, ours vs JSON vs the official SDK, 1k RL datums x 2k tokens");
  const codec = await benchCodec(log);
  log("client: awaited vs pipelined steps at 100 ms latency");
  const pipelining = await benchPipelining(100, SMOKE ? 2 : undefined);
  await writeResult("client", { codec, pipelining });
  console.log(`${codecTable(codec)}

| training step at ${pipelining.latency_ms} ms latency | awaited one by one | pipelined | ratio |
| --- | --- | --- | --- |
| ms per step | ${pipelining.awaited_ms.toFixed(0)} | ${pipelining.pipelined_ms.toFixed(0)} | ${
    pipelining.ratio.toFixed(2)
  }× |
`);
}

async function runSoakBench(): Promise<void> {
  const r = await benchSoak(log, SMOKE ? SMOKE_SOAK_STEPS : soakSteps);
  await writeResult("soak", r);
  console.log(
    `| soak (${r.steps} steps) | step ${r.reference_step} | step ${r.steps} | growth |
| --- | --- | --- | --- |
| resident memory (MiB) | ${r.rss_reference_mib} | ${r.rss_last_mib} | ${
      (100 * r.rss_growth).toFixed(1)
    } % (${r.within_10_percent ? "within" : "over"} 10 %) |
| jax-js heap (MiB) | ${r.heap_reference_mib} | ${r.heap_last_mib} | |
`,
  );
}

async function runRolloutBench(): Promise<void> {
  const r = await benchRollout(log);
  await writeResult("rollout", r);
  const f = (x: number, d = 2) => x.toFixed(d);
  console.log(
    `| sampler | in flight | prefix cache | episodes/s | sampled tok/s | vs jax-js | vs jax-js + cache | vs committed |
| --- | --- | --- | --- | --- | --- | --- | --- |
${
      r.levels.map((l) =>
        `| ${l.engine} | ${l.concurrency} | ${l.prefix_cache ? "on" : "off"} | ${
          f(l.episodes_per_s)
        } | ${f(l.sampled_tokens_per_s, 0)} | ${f(l.ratio_vs_jax)}× | ${
          f(l.ratio_vs_jax_cache_on)
        }× | ${l.ratio_vs_committed_before === null ? "" : `${f(l.ratio_vs_committed_before)}×`} |`
      ).join("\n")
    }
(${r.sizes.env}, ${r.sizes.model}; same episodes in every arm: ${r.same_episodes_in_every_arm}; at ${r.goal.concurrency} in flight ONNX Runtime ÷ jax-js: ${
      f(r.goal.vs_jax)
    }× (cache off), ${f(r.goal.vs_jax_cache_on)}× (jax-js with its cache), both with their caches ${
      r.goal.cached_vs_jax_cache_on === null ? "n/a" : f(r.goal.cached_vs_jax_cache_on)
    }×, goal ${r.goal.target_ratio}×)
`,
  );
}

async function runOpenRewardBench(): Promise<void> {
  const r = await benchOpenReward(log);
  await writeResult("openreward", r);
  const f = (x: number, d = 1) => x.toFixed(d);
  console.log(
    `| environment | in flight | calls/episode | in process (ep/s) | ORS, same process | ORS, own process | slowdown (own process) | ms per call |
| --- | --- | --- | --- | --- | --- | --- | --- |
${
      r.rows.map((row) =>
        `| ${row.env} | ${row.concurrency} | ${f(row.tool_calls_per_episode)} | ${
          f(row.episodes_per_s.in_process)
        } | ${f(row.episodes_per_s.ors_same_process)} | ${f(row.episodes_per_s.ors_subprocess)} | ${
          f(row.slowdown.ors_subprocess, 2)
        }× | ${f(row.overhead_ms_per_call.ors_subprocess, 2)} |`
      ).join("\n")
    }
(${r.policy}; ${r.sizes.groups} groups × ${r.sizes.groupSize} episodes, median of ${r.sizes.rounds} rounds)
`,
  );
}

async function runProxyBench(): Promise<void> {
  const r = await benchProxy(log);
  await writeResult("proxy", r);
  const f = (x: number) => x.toFixed(1);
  console.log(`| per request (ms) | p50 | p99 |
| --- | --- | --- |
| calling the sampler directly | ${f(r.direct_sampler_call.p50_ms)} | ${
    f(r.direct_sampler_call.p99_ms)
  } |
| through the proxy | ${f(r.through_proxy.p50_ms)} | ${f(r.through_proxy.p99_ms)} |
| added by the proxy (latency − sampler time) | ${f(r.added_per_request.p50_ms)} | ${
    f(r.added_per_request.p99_ms)
  } |
| the proxy's own time in the handler (without the sampler) | ${
    f(r.proxy_handler_time_without_sampler.p50_ms)
  } | ${f(r.proxy_handler_time_without_sampler.p99_ms)} |
| one session at a time: directly / through the proxy | ${
    f(r.one_session_alone.direct_sampler_call.p50_ms)
  } / ${f(r.one_session_alone.through_proxy.p50_ms)} | ${
    f(r.one_session_alone.direct_sampler_call.p99_ms)
  } / ${f(r.one_session_alone.through_proxy.p99_ms)} |
| one session at a time: added by the proxy | ${
    f(r.one_session_alone.added_per_request.p50_ms)
  } | ${f(r.one_session_alone.added_per_request.p99_ms)} |
(${r.sizes.sessions} concurrent sessions × ${r.sizes.turns_per_session} turns, ${r.sizes.model}, ${r.sizes.max_tokens} tokens per turn)
`);
  console.log(apiTable(r.apis));
}
