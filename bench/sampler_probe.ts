/**
 * Sampling throughput probe for the local sampler (not the benchmark): by default
 * `local/bench`, random 16-token prompts, 112 new tokens (to 128), no stops, temperature 1.
 *
 * Usage: `deno run -A bench/sampler_probe.ts [--rows 16] [--calls 4] [--jobs 16]
 * [--model local/bench] [--prompt 16] [--new 112]` (`--jobs 1` samples all rows from one
 * prompt; a long `--prompt` shows what the cache length costs each decode step).
 * Prints tok/s per call; the first call includes jit compilation, so it is reported apart.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { findLocalModel, loadBaseWeights } from "../lib/local/models.ts";
import { Rng } from "../lib/util/random.ts";
import { LocalSampler, type SampleJob } from "../lib/local/sampler/mod.ts";

const { values } = parseArgs({
  options: {
    rows: { type: "string", default: "16" },
    calls: { type: "string", default: "4" },
    jobs: { type: "string" },
    model: { type: "string", default: "local/bench" },
    prompt: { type: "string", default: "16" },
    new: { type: "string", default: "112" },
  },
});
const rows = Number(values.rows);
const jobs = Number(values.jobs ?? values.rows);
const calls = Number(values.calls);
const PROMPT_LEN = Number(values.prompt);
const NEW_TOKENS = Number(values.new);

const spec = findLocalModel(values.model)!;
const sampler = await LocalSampler.create({
  config: spec.config,
  base: await loadBaseWeights(spec),
  adapter: null,
  lora: null,
});
const rng = new Rng(0);

function makeJobs(): SampleJob[] {
  return Array.from({ length: jobs }, (_, j) => ({
    prompt: Int32Array.from({ length: PROMPT_LEN }, () => rng.int(spec.config.vocabSize)),
    numSamples: Math.floor(rows / jobs) + (j < rows % jobs ? 1 : 0),
    maxTokens: NEW_TOKENS,
    temperature: 1,
    topK: -1,
    topP: 1,
    seed: j,
    stopTokens: [],
    stopSequences: [],
    promptLogprobs: false,
    topkPromptLogprobs: 0,
  }));
}

const rates: number[] = [];
for (let c = 0; c < calls; c++) {
  const t0 = performance.now();
  const results = await sampler.sample(makeJobs());
  const seconds = (performance.now() - t0) / 1000;
  const tokens = results.flatMap((r) => r.sequences).reduce((n, s) => n + s.tokens.length, 0);
  rates.push(tokens / seconds);
  const rss = (Deno.memoryUsage().rss / 2 ** 20).toFixed(0);
  console.log(
    `call ${c}: ${tokens} tokens in ${seconds.toFixed(2)} s = ${rates[c].toFixed(0)} tok/s` +
      `${c === 0 ? " (incl. compile)" : ""}, rss ${rss} MiB`,
  );
}
const steady = rates.slice(1).sort((a, b) => a - b);
if (steady.length > 0) {
  console.log(
    `${spec.name}, ${rows} rows, prompt ${PROMPT_LEN}, ${NEW_TOKENS} new tokens: ` +
      `steady median ${steady[Math.floor(steady.length / 2)].toFixed(0)} tok/s, ` +
      `first call ${rates[0].toFixed(0)} tok/s`,
  );
}
sampler.dispose();
// jax-js's wasm worker pool keeps the event loop alive.
Deno.exit(0);
